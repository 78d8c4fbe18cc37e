// More event streams of one wallet than the service keeps sessions for it (sessionsPerWalletMax, 10; a sign-in beyond
// it ends the oldest): the SDK's AgentCredit objects of one wallet in one process share one signed-in session, so
// eleven of them stream side by side; streams that each sign in, as separate processes do, stop one by one (`ended`
// names why) until the wallet's sessions fit, instead of signing in again and ending another's session in a loop.
import t from 'tap'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { AgentCredit } from '../../src/client/sdk.ts'
import { CreditClient } from '../../src/client/client.ts'
import { EventStream, type StreamEvent } from '../../src/client/stream.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

const SESSIONS_PER_WALLET_MAX = 10

/** `account`, counting the sign-ins it signs (each SIWE message is one session). */
function counted(account: LocalAccount): { account: LocalAccount; signIns: () => number } {
  let signIns = 0
  return {
    account: { ...account, signMessage: (args) => (signIns++, account.signMessage(args)) },
    signIns: () => signIns,
  }
}

/**
 * Escrows a job with `jobClient` as its client, registered by a fresh borrower: the job's event reaches every open
 * stream of `jobClient` (the registration signs in as the borrower, not as the streaming wallet).
 */
async function jobFor(jobClient: LocalAccount, jobId: string): Promise<void> {
  const borrower = privateKeyToAccount(generatePrivateKey())
  const fundingTxHash = await new ChainAgent(h.network, jobClient).fundJob(jobId, USDC, usdc(10), borrower.address)
  const reply = await (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(10).toString(), dueAt: new Date(Date.now() + 86_400_000).toISOString(), fundingTxHash,
  })
  if (reply.status !== 201) throw new Error(`job: ${reply.status} ${JSON.stringify(reply.body)}`)
}

const jobEvent = (jobId: string) => (event: StreamEvent) => event.kind === 'job' && event.job.jobId === jobId

t.test('eleven AgentCredit objects of one wallet share one session: their streams all stay open and all get the event', async (t) => {
  const wallet = counted(await fundedAccount(h.devnet, h.network, usdc(100)))
  const sdks = Array.from({ length: SESSIONS_PER_WALLET_MAX + 1 }, () => new AgentCredit({ baseUrl: h.url, account: wallet.account }))
  const streams = await Promise.all(sdks.map((sdk) => sdk.events()))
  t.teardown(() => streams.forEach((stream) => stream.close()))
  t.equal(wallet.signIns(), 1, 'one sign-in for all eleven')

  const arrived = Promise.all(streams.map((stream) => stream.next(jobEvent('job_shared_session'), 30_000)))
  await jobFor(wallet.account, 'job_shared_session')
  await arrived
  t.same(streams.map((stream) => stream.lastClose), streams.map(() => undefined), 'no stream was closed')
  t.equal(wallet.signIns(), 1, 'and nothing signed in again')
})

t.test('streams signing in on their own beyond the bound: the surplus ones stop with a reason, the rest stay and nothing signs in any more', async (t) => {
  const wallet = counted(await fundedAccount(h.devnet, h.network, usdc(100)))
  const count = SESSIONS_PER_WALLET_MAX + 2
  // Each stream signs in for each connection, as one per process would; opened one after the other, so that each
  // first connection upgrades on a session that is the wallet's newest.
  const streams: EventStream[] = []
  t.teardown(() => streams.forEach((stream) => stream.close()))
  for (let i = 0; i < count; i++) {
    const stream = new EventStream({ baseUrl: h.url, token: () => new CreditClient(h.url).signIn(wallet.account) })
    streams.push(stream)
    await stream.ready()
  }

  const stopped: EventStream[] = []
  await new Promise<void>((resolve) => {
    for (const stream of streams) {
      void stream.ended.then((error) => {
        if (error === undefined) return
        stopped.push(stream)
        if (stopped.length === count - SESSIONS_PER_WALLET_MAX) resolve()
      })
    }
  })
  for (const stream of stopped) {
    t.match((await stream.ended)?.message, /session ended twice within .*share one session per wallet/, 'a stopped stream says why')
    t.equal(stream.lastClose?.code, 4001, 'after its session ended')
  }

  const running = streams.filter((stream) => !stopped.includes(stream))
  t.equal(running.length, SESSIONS_PER_WALLET_MAX)
  const arrived = Promise.all(running.map((stream) => stream.next(jobEvent('job_session_bound'), 30_000)))
  await jobFor(wallet.account, 'job_session_bound')
  await arrived
  t.pass('the ten left all get the wallet\'s event')
  const signIns = wallet.signIns()
  const again = Promise.all(running.map((stream) => stream.next(jobEvent('job_session_bound_2'), 30_000)))
  await jobFor(wallet.account, 'job_session_bound_2')
  await again
  t.equal(wallet.signIns(), signIns, 'no sign-in since: the loop is over')
  t.equal(stopped.length, count - SESSIONS_PER_WALLET_MAX, 'and no other stream stopped')
})
