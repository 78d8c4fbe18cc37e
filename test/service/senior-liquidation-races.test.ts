// review32's open races of the senior liquidations (src/service/operator-commands.ts liquidateSeniors): two later
// advances on one job liquidated close together (each liquidates the older ones it needs first: no advance liquidated
// twice, no second default in the borrower's passport, the collateral taken oldest first), and an older advance that a
// concurrent liquidation mined and never recorded (the contract answers the service's own AlreadyLiquidated: it is found
// and recorded as mined, and the caller's liquidation goes on). Service level, on the devnet.
import t, { type Test } from 'tap'
import type { Address, Hex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { sendLiquidate } from '../../src/chain/operator.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { EngineRefusedError } from '../../src/engine/errors.ts'
import { fund, fundedJob, readyLender, startHarness, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { fundAdvance } from '../api/fixtures/api.ts'

const unanswered = { ticket: undefined, encode: () => ({ status: 200, body: null }) }

let h: Harness
let honest: ReadyLender
let party: ReadyLender
t.before(async () => {
  h = await startHarness()
  // One band-A-only lender, and one of bands B and C that is cheaper: each test's first advance (band A) goes to the
  // first, its later ones to the second.
  honest = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100), riskBands: ['A'] })
  party = await readyLender(h, { minFeeBps: 1, liquidityAtomic: usdc(200), riskBands: ['B', 'C'] })
})
t.teardown(async () => {
  await h.stop()
})

/**
 * A job of 25 of collateral with three advances, oldest first: `senior` (10, band A, to the band-A-only lender), then
 * two band-C ones to the other lender (`middle` 20 and `last` 5); the job failed. Their total owed is above the
 * collateral, so a later one's liquidation liquidates the older ones first.
 */
async function threeOnFailedJob(t: Test, jobId: string) {
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(500) })
  await fund(h.devnet, h.network, borrower.address, usdc(40))
  const posting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(25))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(25).toString(), txHash: posting })).status, 201)
  const senior = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: honest, source: jobId, amountAtomic: usdc(10), maximumFeeAtomic: usdc(1) })
  const middle = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: party, source: jobId, amountAtomic: usdc(20), maximumFeeAtomic: usdc(1) })
  const last = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: party, source: jobId, amountAtomic: usdc(5), maximumFeeAtomic: usdc(1) })
  const failed = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })
  t.equal(failed.status, 200, `the job failed: ${failed.status === 200 ? '' : JSON.stringify(failed.body)}`)
  return { borrower, senior, middle, last }
}

/** The Liquidated events on chain of each advance key (from the devnet's first block). */
async function liquidatedOnChain(keys: readonly Hex[]): Promise<Map<Hex, bigint[]>> {
  const publicClient = h.app.service.clientsOf(h.network.slug).publicClient
  const logs = await publicClient.getContractEvents({ address: h.network.creditContract, abi: creditFacilityV2Abi, eventName: 'Liquidated', fromBlock: 0n, strict: true })
  const out = new Map<Hex, bigint[]>(keys.map((k) => [k, []]))
  for (const log of logs) out.get(log.args.offerKey as Hex)?.push(log.args.fromCollateral as bigint)
  return out
}

/** The borrower's passport entries that record a default by liquidation, by advance id. */
function defaultsInPassport(borrower: Address): Map<string, number> {
  const counts = new Map<string, number>()
  for (const e of h.app.service.passport.page(borrower, 0, 1000)) {
    if (e.kind !== 'advance_defaulted' && e.kind !== 'liquidated_with_shortfall') continue
    const advanceId = (JSON.parse(e.details) as { advanceId: string }).advanceId
    counts.set(advanceId, (counts.get(advanceId) ?? 0) + 1)
  }
  return counts
}

t.test('two later advances liquidated together: each older one liquidated once, oldest first, one default each', async (t) => {
  const { borrower, senior, middle, last } = await threeOnFailedJob(t, 'job_races_two_juniors')
  const service = h.app.service
  const ids = [senior, middle, last].map((f) => f.advance.advanceId as string)
  const caller = party.account.address as Address
  t.same(service.engine.seniorLiquidations({ advanceId: ids[2]!, caller }, service.now()).map((s) => s.advanceId), [ids[0], ids[1]], 'the last one needs both older ones first')
  t.same(service.engine.seniorLiquidations({ advanceId: ids[1]!, caller }, service.now()).map((s) => s.advanceId), [ids[0]], 'the middle one needs the oldest first')

  // Both requests at once: the last one's liquidates the oldest and the middle one as their lenders' requests, while
  // the middle one's own request liquidates the oldest, then itself.
  const results = await Promise.allSettled([
    service.liquidate(unanswered, caller, ids[1]!),
    service.liquidate(unanswered, caller, ids[2]!),
  ])
  t.equal(results[1]!.status, 'fulfilled', `the last advance's liquidation is recorded: ${results[1]!.status === 'rejected' ? String(results[1]!.reason) : ''}`)
  // The middle advance's own request either liquidated it (it took its lock first) or finds it liquidated by the other
  // request as its lender's: 409, done (README "older advances on the same source"), never a second liquidation.
  const own = results[0]!
  if (own.status === 'rejected') {
    t.ok(own.reason instanceof EngineRefusedError && own.reason.error.class === 'conflict' && own.reason.message.startsWith(`advance ${ids[1]} is `), `the middle advance's own request: 409 on its own advance, done (${String(own.reason)})`)
  } else t.pass('the middle advance\'s own request liquidated it')

  const onChain = await liquidatedOnChain([senior, middle, last].map((f) => f.advance.advanceKey as Hex))
  t.same([...onChain.values()].map((v) => v.length), [1, 1, 1], 'each advance liquidated once on chain')
  const seniorOwed = BigInt(senior.advance.lenderOwedAtomic) + BigInt(senior.advance.reserveOwedAtomic)
  t.same([...onChain.values()].map((v) => v[0]), [seniorOwed, usdc(25) - seniorOwed, 0n], 'the collateral taken oldest first')
  const views = await Promise.all(ids.map(async (id, i) => (await (i === 0 ? honest : party).client.get(`/credit/advances/${id}`)).body))
  for (const [i, view] of views.entries()) {
    t.not(view.recovery, null, `${ids[i]} is liquidated`)
    t.equal(BigInt(view.recovery.fromCollateralAtomic), [...onChain.values()][i]![0], `${ids[i]}'s recorded recovery is the chain's`)
  }
  const defaults = defaultsInPassport(borrower.address)
  t.same(ids.map((id) => defaults.get(id) ?? 0), [1, 1, 1], 'one default entry per advance in the borrower\'s passport')
  service.engine.checkInvariants()
})

t.test('an older advance a concurrent liquidation mined and never recorded: AlreadyLiquidated, found and recorded once', async (t) => {
  const { borrower, senior, middle, last } = await threeOnFailedJob(t, 'job_races_already')
  const service = h.app.service
  const ids = [senior, middle, last].map((f) => f.advance.advanceId as string)
  const caller = party.account.address as Address
  // Liquidations of both older advances mined with nobody recording them (a concurrent liquidation whose process crashed
  // between its transactions and their commit): the follower is stopped, so the service does not learn of them. The
  // oldest one's took all it owed (a second is NothingOwed), the middle one's the rest of the collateral and left it
  // owing (a second is AlreadyLiquidated).
  const follower = service.followers.get(h.network.slug)!
  await follower.stop()
  const clients = service.clientsOf(h.network.slug)
  const oldestOwed = BigInt(senior.advance.lenderOwedAtomic) + BigInt(senior.advance.reserveOwedAtomic)
  await sendLiquidate(clients, { offerKey: senior.advance.advanceKey as Hex, backingCoveredAtomic: 0n })
  await sendLiquidate(clients, { offerKey: middle.advance.advanceKey as Hex, backingCoveredAtomic: 0n })
  const middleOnChain = (await liquidatedOnChain([middle.advance.advanceKey as Hex])).get(middle.advance.advanceKey as Hex)!
  t.same(middleOnChain, [usdc(25) - oldestOwed], 'the middle one took the rest of the collateral, and still owes: a second liquidation is AlreadyLiquidated')
  t.same(service.engine.seniorLiquidations({ advanceId: ids[2]!, caller }, service.now()).map((s) => s.advanceId), [ids[0], ids[1]], 'the service still holds both older ones to liquidate')

  const later = service.liquidate(unanswered, caller, ids[2]!).then(() => 'recorded', (error: unknown) => String(error))
  follower.start()
  t.equal(await later, 'recorded', 'the last advance\'s liquidation goes on')
  const onChain = await liquidatedOnChain([senior, middle, last].map((f) => f.advance.advanceKey as Hex))
  t.same([...onChain.values()].map((v) => v.length), [1, 1, 1], 'no advance liquidated twice on chain')
  const views = await Promise.all(ids.map(async (id, i) => (await (i === 0 ? honest : party).client.get(`/credit/advances/${id}`)).body))
  t.same(views.map((v) => BigInt(v.recovery.fromCollateralAtomic)), [oldestOwed, usdc(25) - oldestOwed, 0n], 'each recorded with the chain\'s recovery')
  // The follower passes the two unrecorded liquidations' blocks: recorded already, nothing is counted twice.
  const head = await clients.publicClient.getBlockNumber({ cacheTime: 0 })
  await new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 15_000
    const poll = () => ((follower.cursor?.blockNumber ?? -1n) >= head ? resolve() : Date.now() > deadline ? reject(new Error('follower behind')) : setTimeout(poll, 25))
    poll()
  })
  const defaults = defaultsInPassport(borrower.address)
  t.same(ids.map((id) => defaults.get(id) ?? 0), [1, 1, 1], 'one default entry per advance in the borrower\'s passport')
  service.engine.checkInvariants()
})
