// Strangers' free lender registrations (a fresh wallet's SIWE signature each) are bounded in time: a registration
// whose session wallet cannot pay the least advance (min(balance, allowance) below advanceMinAtomic) lenderUnfundedTtlSeconds
// after it was made, and that did nothing else, is removed with its session key, durably; a funded one, a young
// one and one that was leased are kept. Real service and anvil; the service's clock is moved by the test.
import t from 'tap'
import type { Address } from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectProblem, until } from './fixtures/api.ts'

const TTL_SECONDS = 3600
let nowMs = Date.now()
const h = await startHarness({ clock: () => nowMs, config: { lenderUnfundedTtlSeconds: TTL_SECONDS } })
t.teardown(() => h.stop())

const policy = () => ({ availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B'] })

/** A wallet that signs in and registers, and nothing else: what a script can do for free. */
async function register(account?: PrivateKeyAccount): Promise<{ account: PrivateKeyAccount; session: PrivateKeyAccount; setup: any[] }> {
  const who = account ?? (await fundedAccount(h.devnet, h.network, 0n))
  const reply = await (await signedIn(h.url, who)).post('/lenders/register', policy())
  if (reply.status !== 201) throw new Error(`register: ${reply.status} ${JSON.stringify(reply.body)}`)
  return { account: who, session: privateKeyToAccount(reply.body.sessionKey.privateKey), setup: reply.body.setupTransactions }
}

const wallet = (lender: Address) => fetch(`${h.url}/lenders/${lender}/wallet`).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }))
const sorted = (addresses: readonly Address[]) => [...addresses].sort()

t.test('an unfunded registration is removed after the TTL, durably; funded and young ones are kept; the address registers again', async (t) => {
  const unfunded = await register()
  // Short of the least advance (one whole unit): 0.999999 USDC with the allowance the setup transaction gives.
  const dust = await register(await fundedAccount(h.devnet, h.network, usdc(1)))
  const owner = new ChainAgent(h.network, dust.account)
  await owner.sendGas(dust.session.address, 10n ** 17n)
  await owner.transferToken(USDC, dust.session.address, usdc(1) - 1n)
  await new ChainAgent(h.network, dust.session).sendUnsigned(dust.setup[0])
  const funded = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100), walletAtomic: usdc(100) })

  const watcher = () => h.app.service.watcher
  await watcher().waitFor(() => watcher().holding(h.network.slug, USDC, dust.session.address) !== undefined, 10_000)

  nowMs += (TTL_SECONDS - 1) * 1000
  t.same(await h.app.lenderSweep.run(), [], 'nothing is removed before its time')
  t.equal((await wallet(unfunded.account.address)).status, 200)

  nowMs += 2000
  const young = await register()
  const removed = await h.app.lenderSweep.run()
  t.same(sorted(removed), sorted([unfunded.account.address, dust.account.address]), 'the unfunded and the dust registrations are removed')
  for (const gone of [unfunded, dust]) {
    const reply = await wallet(gone.account.address)
    t.equal(reply.status, 404, 'GET /lenders/{address}/wallet: 404 as for one never registered')
    t.equal((reply.body as { code: string }).code, 'lender_not_found')
    t.equal(h.app.service.sessionKeyRecords.get(gone.account.address), undefined, 'its session key record is deleted')
    t.notOk(watcher().isWaitingForFunds(h.network.slug, gone.session.address), 'the watcher no longer waits for its wallet')
    t.equal(watcher().holding(h.network.slug, USDC, gone.session.address), undefined, 'nor reads it (the dust wallet had a watch slot)')
  }
  for (const kept of [funded.account.address, young.account.address]) t.equal((await wallet(kept)).status, 200, `${kept} is kept`)
  const listed = ((await (await fetch(`${h.url}/lenders`)).json()) as { address: Address }[]).map((l) => l.address)
  t.notOk(listed.includes(unfunded.account.address), 'GET /lenders no longer lists it')
  t.same(await h.app.lenderSweep.run(), [], 'a second pass at the same time removes nothing more')

  await h.restart()
  t.equal((await wallet(unfunded.account.address)).status, 404, 'removed for good: the store no longer has it after a restart')
  t.equal(h.app.service.engine.getLender(dust.account.address), undefined)
  t.equal(h.app.service.sessionKeyRecords.get(unfunded.account.address), undefined)
  t.equal((await wallet(funded.account.address)).status, 200, 'the funded lender survives the restart')
  // The sweep's cursor is stored: after the restart the walk goes on from where it stopped, so the funded lender's
  // wallet, looked at before, is not read on chain again.
  const { publicClient } = h.app.service.clientsOf(h.network.slug)
  const multicall = publicClient.multicall
  const readWallets: Address[] = []
  publicClient.multicall = (async (args: { contracts: readonly { args: readonly Address[] }[] }) => {
    readWallets.push(...args.contracts.map((call) => call.args[0] as Address))
    return multicall.call(publicClient, args as never)
  }) as unknown as typeof multicall
  t.same(await h.app.lenderSweep.run(), [], 'the funded lender stays after the restart\'s first pass')
  publicClient.multicall = multicall
  t.notOk(readWallets.includes(funded.session.address), 'its wallet is not read again after the restart')

  const again = await register(unfunded.account)
  t.not(again.session.address, unfunded.session.address, 'the address registers again, with a new session key')
  t.equal((await wallet(unfunded.account.address)).status, 200)
})

t.test('at most lendersPendingMax registrations wait unfunded: then 503 lender_registrations_full, nothing recorded, nobody evicted', async (t) => {
  const engine = () => h.app.service.engine
  const lenders = () => engine().lendersPage(0, 1000, 1000).items.map((l) => l.address)
  // Left by the first test: the funded lender (back in its books once the watcher has read it) and two unfunded ones.
  await h.restart({ lendersPendingMax: 3 })
  await until(() => engine().parkedLenderCount() === 2, 10_000, 'the watcher\'s first read unparks the funded lender')
  const third = await register()
  const before = lenders()
  const refused = await fundedAccount(h.devnet, h.network, 0n)
  const reply = await (await signedIn(h.url, refused)).post('/lenders/register', policy())
  expectProblem(t, reply, 503, 'lender_registrations_full')
  t.equal(reply.headers.get('retry-after'), '60')
  t.same(lenders(), before, 'nothing recorded, nobody removed')
  t.equal((await wallet(refused.address)).status, 404)

  // The sweep makes room: the waiting registrations past their time are removed, and the refused wallet registers.
  nowMs += (TTL_SECONDS + 1) * 1000
  t.ok((await h.app.lenderSweep.run()).includes(third.account.address))
  t.equal(engine().parkedLenderCount(), 0)
  await register(refused)
  t.equal((await wallet(refused.address)).status, 200)
})

t.test('a wallet funded after the sweep read it is kept: the watcher\'s latest reading is checked when the removal is planned', async (t) => {
  const late = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100), walletAtomic: usdc(100) })
  const watcher = h.app.service.watcher
  await watcher.waitFor(() => watcher.spendableAtomic(h.network.slug, USDC, late.session.address) >= usdc(1), 10_000)
  nowMs += (TTL_SECONDS + 1) * 1000
  // The sweep's read of the wallets answers as it would have just before the funding landed: nothing.
  const { publicClient } = h.app.service.clientsOf(h.network.slug)
  const multicall = publicClient.multicall
  publicClient.multicall = (async (args: { contracts: readonly unknown[] }) => args.contracts.map(() => 0n)) as unknown as typeof multicall
  t.teardown(() => {
    publicClient.multicall = multicall
  })
  const removed = await h.app.lenderSweep.run()
  t.notOk(removed.includes(late.account.address), 'not removed')
  t.equal((await wallet(late.account.address)).status, 200, 'still registered')
})

t.test('a withdrawal does not make a never-funded registration permanent: it is removed at its TTL as the others', async (t) => {
  // A withdrawal is free (no chain transaction: it lowers what the service may lend), so counting it as activity let a
  // script keep its free registrations for ever, holding lendersPendingMax and its client's places (registrations2's finding).
  const account = await fundedAccount(h.devnet, h.network, 0n)
  const client = await signedIn(h.url, account)
  t.equal((await client.post('/lenders/register', policy())).status, 201)
  const withdrawn = await client.post(`/lenders/${account.address}/withdraw`, { amountAtomic: '1' })
  t.equal(withdrawn.status, 200, JSON.stringify(withdrawn.body))
  t.equal(withdrawn.body.lender.withdrawnAtomic, '1')
  nowMs += (TTL_SECONDS + 1) * 1000
  t.ok((await h.app.lenderSweep.run()).includes(account.address), 'removed by the sweep')
  t.equal((await wallet(account.address)).status, 404)
})
