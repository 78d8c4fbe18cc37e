// The system map's cross-actor steps are declared in src/engine/steps.ts (the engine's code paths decide them). This
// runs every declared path with the engine's commands instrumented, observes from their changes which actor events
// and creations each command made (the new entries of each actor's history) and which records it wrote, and fails
// when a command did something its declaration does not say, or when a declared step never happened.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import { ENGINE_PATHS } from '../../src/engine/steps.ts'
import { storedHistory, type TransitionEntry } from '../../src/engine/history.ts'
import type { Change } from '../../src/engine/types.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'
import {
  ASSET, BORROWER, CLIENT, NET, T0, addr, createJob, fundAdvance, hash, lenderInput, newEngine, offerFor, registerBacking, unwrap,
  repaidFact,
} from './fixtures/world.ts'

const COMMANDS = [...new Set(ENGINE_PATHS.map((p) => p.command))]
const RECORDS = new Set(['lender', 'borrower', 'source', 'reserve'])

/** Observed per command: `kind EVENT` steps and record kinds, over every call. */
const observed = new Map<string, { steps: Set<string>; records: Set<string> }>()
const lastSeen = new Map<string, TransitionEntry>()

function instrument(engine: Engine): void {
  for (const command of COMMANDS) {
    const original = (engine as unknown as Record<string, (...args: unknown[]) => { ok: boolean; changes?: Change[] }>)[command]
    if (typeof original !== 'function') throw new Error(`Engine has no command ${command}`)
    Object.defineProperty(engine, command, {
      value: (...args: unknown[]) => {
        const result = original.apply(engine, args)
        if (!result.ok || !result.changes) return result
        const seen = observed.get(command) ?? { steps: new Set(), records: new Set() }
        observed.set(command, seen)
        for (const change of result.changes) {
          if (RECORDS.has(change.kind)) seen.records.add(change.kind)
          if (!['job', 'offer', 'lease', 'advance'].includes(change.kind)) continue
          const key = `${change.kind}:${change.id}`
          const history = storedHistory(change.record)
          const last = lastSeen.get(key)
          const from = last === undefined ? 0 : history.lastIndexOf(last) + 1
          for (const entry of history.slice(from)) seen.steps.add(`${change.kind} ${entry.event}`)
          const newest = history.at(-1)
          if (newest !== undefined) lastSeen.set(key, newest)
        }
        return result
      },
    })
  }
}

const OPERATOR = addr(0x0e)

t.test('every engine path the system map declares is what the engine does', async (t) => {
  const { engine, wallets } = newEngine({ operators: [OPERATOR] })
  instrument(engine)
  registerBacking(engine)
  unwrap(engine.registerLender(lenderInput(1), T0))
  unwrap(engine.registerLender(lenderInput(2, { minFeeBps: 200 }), T0))

  // Backing source: request, match, pay, repay.
  const backed = fundAdvance(engine)
  unwrap(engine.repayAdvance(repaidFact(engine, backed, hash(1)), T0))

  // A job: collateral, an advance repaid, one settled by completion.
  createJob(engine, 'job_a', 100_000n)
  unwrap(engine.postCollateral({ jobId: 'job_a', borrower: BORROWER, amountAtomic: 10n, proof: { network: 'net-a', txHash: hash(2), logIndex: 0 }, caller: BORROWER } as never, T0))
  const onJob = fundAdvance(engine, { repaymentSource: 'job_a' }, T0, 2)
  unwrap(engine.repayAdvance(repaidFact(engine, onJob, hash(3)), T0))
  fundAdvance(engine, { repaymentSource: 'job_a' }, T0, 3)
  offerFor(engine, { repaymentSource: 'job_a' }) // a waiting offer, declined by the completion
  unwrap(engine.completeJob({ jobId: 'job_a', caller: CLIENT, network: 'net-a', txHash: hash(4) }, T0))

  // A lease that times out, the offer rematched by dispatch; then an offer nobody takes goes stale.
  createJob(engine, 'job_b', 100_000n)
  const timedOut = offerFor(engine, { repaymentSource: 'job_b' })
  const first = unwrap(engine.matchOffer({ offerId: timedOut, caller: BORROWER }, T0)).lease!
  // The chain observed past the lease's deadline (the second after it) expires it; dispatch rematches the offer.
  const pastDeadline = first.expiresAtMs + 1000
  unwrap(engine.observeChain({ network: NET, toBlock: 1n, toBlockHash: '0x', toBlockTimeMs: pastDeadline, events: [] }, pastDeadline))
  unwrap(engine.dispatch(pastDeadline))
  // The follower sees the SupplierPaid of a leased offer (no report): the advance is created.
  const seenOffer = offerFor(engine, { repaymentSource: 'job_b' }, pastDeadline)
  const paidLease = unwrap(engine.matchOffer({ offerId: seenOffer, caller: BORROWER }, pastDeadline)).lease!
  const offerKey = engine.getOffer(seenOffer)!.offerKey
  const paidEvent = {
    kind: 'supplier_paid' as const, proofKey: `${NET}:${hash(77)}:0`, offerKey, network: NET, txHash: hash(77), logIndex: 0,
    payer: paidLease.payer, supplier: paidLease.supplierAddress, asset: paidLease.asset, amountAtomic: paidLease.amountAtomic,
  }
  const seenPaid = unwrap(engine.observeChain({ network: NET, toBlock: 2n, toBlockHash: '0x', toBlockTimeMs: pastDeadline, events: [paidEvent] }, pastDeadline))
  t.equal(seenPaid.advances.length, 1, 'the observed payment opened an advance')
  // A lender whose wallet cannot pay: its lease is born expired, the next lender gets the offer.
  wallets.set(lenderInput(1).sessionAddress, 0n)
  wallets.set(lenderInput(2).sessionAddress, 0n)
  const refused = offerFor(engine, { repaymentSource: 'job_b' }, first.expiresAtMs)
  unwrap(engine.matchOffer({ offerId: refused, caller: BORROWER }, first.expiresAtMs))
  // Offer TTLs run on the chain's time: it is observed at this one's expiry before the borrower matches it again.
  const staleAt = engine.getOffer(refused)!.expiresAtMs
  const staleBatch = unwrap(engine.observeChain({ network: NET, toBlock: 3n, toBlockHash: '0x', toBlockTimeMs: staleAt, events: [] }, staleAt))
  t.same(staleBatch.expiredOffers.map((o) => o.offerId), [timedOut], 'the rematched offer expired with its lease')
  unwrap(engine.matchOffer({ offerId: refused, caller: BORROWER }, staleAt))
  // An offer no lender's ask fits waits until dispatch finds it stale. (The offer dispatch leased again above expired
  // with its second lease instead, in the follower's batch at staleAt: that lease ended past the offer's TTL.)
  offerFor(engine, { repaymentSource: 'job_b', maximumFeeAtomic: 0n }, staleAt)
  const later = staleAt + engine.config.offerTtlMs
  unwrap(engine.observeChain({ network: NET, toBlock: 3n, toBlockHash: '0x', toBlockTimeMs: later, events: [] }, later))
  unwrap(engine.dispatch(later))
  wallets.balances.clear()
  engine.walletChanged(lenderInput(1).sessionAddress)
  engine.walletChanged(lenderInput(2).sessionAddress)

  // A failed job: its leased offers are closing (their leases stay payable), another offer's capacity released, its
  // advance defaulted; then the advance is liquidated; the chain shows one closing offer paid (its advance is born
  // defaulted) and passes the other's lease deadline (it ends declined).
  const now = staleAt + 2 * engine.config.offerTtlMs
  createJob(engine, 'job_c', 100_000n, now + 86_400_000)
  createJob(engine, 'job_d', 100_000n, now + 86_400_000)
  const defaulted = fundAdvance(engine, { repaymentSource: 'job_c' }, now, 4)
  const leased = offerFor(engine, { repaymentSource: 'job_c' }, now)
  const closingLease = unwrap(engine.matchOffer({ offerId: leased, caller: BORROWER }, now)).lease!
  const paidLater = offerFor(engine, { repaymentSource: 'job_c' }, now)
  const paidLaterLease = unwrap(engine.matchOffer({ offerId: paidLater, caller: BORROWER }, now)).lease!
  offerFor(engine, { repaymentSource: 'job_d' }, now)
  unwrap(engine.failJob({ jobId: 'job_c', reason: 'not_delivered', caller: CLIENT }, now))
  const recovery = unwrap(engine.planLiquidation({ advanceId: defaulted, caller: OPERATOR }, now))
  unwrap(engine.liquidate({ advanceId: defaulted, caller: OPERATOR, network: 'net-a', txHash: hash(5) } as never, now))
  t.ok(recovery.owedAtomic > 0n)
  const closingPaid = {
    ...paidEvent, proofKey: `${NET}:${hash(78)}:0`, txHash: hash(78), offerKey: engine.getOffer(paidLater)!.offerKey,
    payer: paidLaterLease.payer, amountAtomic: paidLaterLease.amountAtomic,
  }
  const bornDefaulted = unwrap(engine.observeChain({ network: NET, toBlock: 4n, toBlockHash: '0x', toBlockTimeMs: now, events: [closingPaid] }, now))
  t.equal(bornDefaulted.advances[0]?.state, 'defaulted', "the closing offer's payment opened an advance, defaulted with its job")
  // Collateral posted before the failure, seen by the follower after it: the defaulted job holds it.
  const collateralPosted = {
    kind: 'collateral_posted' as const, jobKey: legacyJobKey('job_c'), asset: ASSET, proofKey: `${NET}:${hash(79)}:0`, borrower: BORROWER, amountAtomic: 10n,
    proof: { network: NET, txHash: hash(79), logIndex: 0 },
  }
  t.equal(unwrap(engine.observeChain({ network: NET, toBlock: 4n, toBlockHash: '0x', toBlockTimeMs: now, events: [collateralPosted] }, now)).collateral.length, 1)
  const pastClosing = closingLease.expiresAtMs + 1000
  unwrap(engine.observeChain({ network: NET, toBlock: 5n, toBlockHash: '0x', toBlockTimeMs: pastClosing, events: [] }, pastClosing))
  t.equal(engine.getOffer(leased), undefined, 'the other closing offer ended (declined) when the chain passed its lease deadline')
  engine.checkInvariants()

  for (const command of COMMANDS) {
    const paths = ENGINE_PATHS.filter((p) => p.command === command)
    const declaredSteps = [...new Set(paths.flatMap((p) => p.steps.map((s) => `${s.kind} ${s.event}`)))].sort()
    const declaredRecords = [...new Set(paths.flatMap((p) => p.records))].sort()
    const seen = observed.get(command)
    t.same([...(seen?.steps ?? [])].sort(), declaredSteps, `${command}: the actor steps it took are the declared ones`)
    // Records one way only: which records a path writes depends on the source kind and amounts (a backing source or a
    // job, a shortfall or none), and this world does not take every such branch; none may go unsaid.
    const undeclared = [...(seen?.records ?? [])].filter((r) => !declaredRecords.includes(r as never))
    t.same(undeclared, [], `${command}: every record it wrote is declared`)
  }
})
