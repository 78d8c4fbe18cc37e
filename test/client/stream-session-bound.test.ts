// More event streams of one wallet than the service keeps sessions for it (sessionsPerWalletMax, 10; a sign-in beyond
// it ends the oldest): the SDK's AgentCredit objects of one wallet in one process share one signed-in session, so
// eleven of them stream side by side; streams that each sign in, as separate processes do, wait longer and longer
// before each sign-in that replaces a lost session and, after a bounded number, stop one by one (`ended` names why)
// until the wallet's sessions fit, instead of ending each other's sessions in a tight loop for ever. A stream whose
// session is lost again and again only for a while (revoked twice, here) waits, signs in again and goes on.
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

t.test('streams signing in on their own beyond the bound: the surplus ones stop with a reason after their bounded retries, the rest stay and nothing signs in any more', async (t) => {
  const wallet = counted(await fundedAccount(h.devnet, h.network, usdc(100)))
  const count = SESSIONS_PER_WALLET_MAX + 2
  // Each stream signs in for each connection, as one per process would; opened one after the other, so that each
  // first connection upgrades on a session that is the wallet's newest.
  const streams: EventStream[] = []
  t.teardown(() => streams.forEach((stream) => stream.close()))
  for (let i = 0; i < count; i++) {
    // Waits of a few milliseconds (the defaults are 30 s and up) and one retry: the bound, not the default's patience.
    const stream = new EventStream({ baseUrl: h.url, token: () => new CreditClient(h.url).signIn(wallet.account), sessionEndedBackoffMs: 5, sessionEndedRetriesMax: 1 })
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
    t.match((await stream.ended)?.message, /2 sessions in a row ended within .*share one session per wallet/, 'a stopped stream says why')
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

t.test('a stream whose replacing session is lost too waits, signs in again and goes on; past sessionEndedRetriesMax it stops', async (t) => {
  const wallet = counted(await fundedAccount(h.devnet, h.network, usdc(100)))
  const tokens: string[] = []
  const stream = new EventStream({
    baseUrl: h.url,
    token: async () => {
      const token = await new CreditClient(h.url).signIn(wallet.account)
      tokens.push(token)
      return token
    },
    sessionEndedBackoffMs: 5,
    sessionEndedRetriesMax: 2,
  })
  t.teardown(() => stream.close())
  await stream.ready()
  let stopped: Error | undefined
  void stream.ended.then((error) => (stopped = error))

  /** Revokes the stream's newest session (DELETE /auth/session), then waits for the sign-in that replaces it. */
  const revokeNewest = async () => {
    const signIns = tokens.length
    const revoked = await new CreditClient(h.url).call('DELETE', '/auth/session', undefined, { token: tokens.at(-1)! })
    t.equal(revoked.status, 200, 'the session revoked')
    await new Promise<void>((resolve) => {
      const check = () => (tokens.length > signIns || stopped !== undefined ? resolve() : setTimeout(check, 5))
      check()
    })
  }
  await revokeNewest()
  await revokeNewest()
  t.equal(stopped, undefined, 'a second lost session does not stop the stream')
  t.equal(wallet.signIns(), 3, 'it signed in again, once per lost session')
  await revokeNewest()
  t.equal(wallet.signIns(), 4, 'and again, the lost ones still within sessionEndedRetriesMax')

  const arrived = Promise.race([stream.next(jobEvent('job_session_regained'), 30_000), stream.ended.then((error) => Promise.reject(error ?? new Error('closed')))])
  await jobFor(wallet.account, 'job_session_regained')
  await arrived
  t.pass('the stream, on its newest session, gets the wallet\'s event')

  await revokeNewest()
  await stream.ended
  t.match(stopped?.message, /3 sessions in a row ended within .*share one session per wallet/, 'one more lost session than sessionEndedRetriesMax: the stream stops, saying why')
  t.equal(wallet.signIns(), 4, 'without signing in again')
})

t.test('AgentCredit.events() passes the caller\'s sessionEndedBackoffMs and sessionEndedRetriesMax to its stream', async (t) => {
  const wallet = counted(await fundedAccount(h.devnet, h.network, usdc(100)))
  const sdk = new AgentCredit({ baseUrl: h.url, account: wallet.account })
  // No retry after a lost session: with the defaults (6 retries, 30 s first wait) the second loss would wait and sign in again.
  const stream = await sdk.events(undefined, { sessionEndedBackoffMs: 5, sessionEndedRetriesMax: 0 })
  t.teardown(() => stream.close())
  let stopped: Error | undefined
  void stream.ended.then((error) => (stopped = error))

  /** Revokes the SDK's current session, then waits until the stream signed in again or stopped. */
  const revokeCurrent = async () => {
    const signIns = wallet.signIns()
    const revoked = await new CreditClient(h.url).call('DELETE', '/auth/session', undefined, { token: await sdk.token() })
    t.equal(revoked.status, 200, 'the session revoked')
    await new Promise<void>((resolve) => {
      const check = () => (wallet.signIns() > signIns || stopped !== undefined ? resolve() : setTimeout(check, 5))
      check()
    })
  }
  await revokeCurrent()
  t.equal(stopped, undefined, 'the first session end is not a lost session: the stream signed in again')
  t.equal(wallet.signIns(), 2)
  await revokeCurrent()
  t.match(stopped?.message, /1 sessions in a row ended within .*share one session per wallet/, 'the replacing session lost: past sessionEndedRetriesMax 0, the stream stops')
  t.equal(wallet.signIns(), 2, 'without signing in again')
})
