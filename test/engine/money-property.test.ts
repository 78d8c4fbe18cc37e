// Money property test (issue 9): the engine, real and in process, against the faithful model of the credit contract
// (src/chain/facility-model.ts). Random interleavings of supplier payments (learned by report, by the chain follower,
// late, twice), chain time, dispatch, repayments of any amount, collateral (reported or only followed), job completion
// and failure, liquidation after due and restarts from the snapshots; after every step the engine's ledger must agree with the contract's.
import fc from 'fast-check'
import t from 'tap'
import { getAddress, zeroHash, type Address as ChainAddress } from 'viem'
import { FacilityModel, JobStatus, type ModelEvent } from '../../src/chain/facility-model.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'
import { ascendingKeys } from '../../src/chain/operator.ts'
import type { LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { Engine, advanceViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot } from '../../src/engine/index.ts'
import { recoveryAmounts } from '../../src/engine/engine.ts'
import type { ChainEventFact } from '../../src/engine/chain-facts.ts'
import type { AdvanceView, Change } from '../../src/engine/index.ts'
import { insuranceAtomic } from '../../src/engine/rules.ts'
import { ASSET, BORROWER, CLIENT, FakeWallets, NET, SUPPLIER, T0, addr, applyChanges, creditRequest, hash, lenderInput, seedSuppliers } from './fixtures/world.ts'

const config = { leaseTtlMs: 30_000, offerTtlMs: 120_000, backingDurationSecondsDefault: 900, leasesPerOfferMax: 4, insuranceShareBps: 1000 }
const TOKEN = getAddress(addr(0x70)) as ChainAddress
const FACILITY = getAddress(addr(0xfa)) as ChainAddress
const OPERATOR = getAddress(addr(0x0e)) as ChainAddress
const LEASE_SIGNER = getAddress(addr(0x5e)) as ChainAddress
const LENDERS = [1, 2].map((n) => lenderInput(n, { availableLiquidityAtomic: 40_000n }))
// job_2's borrower is another agent: failing it suspends that borrower only, so a run goes on borrowing after it.
const BORROWER_2 = addr(0xb2)
const JOBS = [{ jobId: 'job_1', receivable: 20_000n, dueMs: 8 * 3600_000, borrower: BORROWER }, { jobId: 'job_2', receivable: 6_000n, dueMs: 3 * 3600_000, borrower: BORROWER_2 }]
const HOLDERS = [CLIENT, BORROWER, BORROWER_2, SUPPLIER, ...LENDERS.flatMap((l) => [l.address, l.sessionAddress]), FACILITY].map((a) => getAddress(a) as ChainAddress)

/** The arguments of the contract's events the engine learns (the model emits them as the contract's ABI decodes them). */
type SupplierPaidArgs = { offerKey: `0x${string}`; payer: ChainAddress; supplier: ChainAddress; amount: bigint; fee: bigint; reserveShare: bigint }
type CollateralPostedArgs = { jobKey: `0x${string}`; borrower: ChainAddress; amount: bigint }
type RepaidArgs = { offerKey: `0x${string}`; payer: ChainAddress; lender: ChainAddress; toLender: bigint; toReserve: bigint; lenderOwed: bigint; reserveOwed: bigint }

type Learn = 'report' | 'follower' | 'both'
type Cmd =
  | { c: 'request'; job: number; amount: number; maxFee: number }
  | { c: 'dispatch' }
  | { c: 'pay'; i: number; learn: Learn; stale: boolean }
  | { c: 'report'; i: number }
  | { c: 'observe' }
  | { c: 'repay'; i: number; how: 'partial' | 'exact' | 'over'; report: boolean }
  | { c: 'collateral'; i: number; amount: number; report: boolean }
  | { c: 'complete'; i: number }
  | { c: 'fail'; i: number }
  | { c: 'liquidate'; i: number }
  | { c: 'restart' }
type Step = { dtMs: number; cmd: Cmd }

const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary })
const i12 = fc.integer({ min: 0, max: 11 })
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  w(7, fc.record({ c: fc.constant('request' as const), job: fc.integer({ min: 0, max: 2 }), amount: fc.integer({ min: 1, max: 5000 }), maxFee: fc.integer({ min: 50, max: 600 }) })),
  w(2, fc.record({ c: fc.constant('dispatch' as const) })),
  w(6, fc.record({ c: fc.constant('pay' as const), i: i12, learn: fc.constantFrom<Learn>('report', 'follower', 'both'), stale: fc.boolean() })),
  w(2, fc.record({ c: fc.constant('report' as const), i: i12 })),
  w(3, fc.record({ c: fc.constant('observe' as const) })),
  w(4, fc.record({ c: fc.constant('repay' as const), i: i12, how: fc.constantFrom('partial' as const, 'exact' as const, 'over' as const), report: fc.boolean() })),
  w(2, fc.record({ c: fc.constant('collateral' as const), i: fc.integer({ min: 0, max: 1 }), amount: fc.integer({ min: 1, max: 3000 }), report: fc.boolean() })),
  w(1, fc.record({ c: fc.constant('complete' as const), i: fc.integer({ min: 0, max: 1 }) })),
  w(2, fc.record({ c: fc.constant('fail' as const), i: fc.integer({ min: 0, max: 1 }) })),
  w(2, fc.record({ c: fc.constant('liquidate' as const), i: i12 })),
  w(1, fc.record({ c: fc.constant('restart' as const) })),
)
// Mostly short steps (leases live 30 s), sometimes long ones (past leases' deadlines and advances' due dates).
const dtArb = fc.oneof(w(3, fc.constant(0)), w(4, fc.integer({ min: 1, max: 15_000 })), w(1, fc.integer({ min: 0, max: 3600_000 })))
const logArb = fc.array(fc.record({ dtMs: dtArb, cmd: cmdArb }), { minLength: 20, maxLength: 30, size: 'max' })

/** A SupplierPaid the model emitted, with what the test needs to report it. */
type Paid = { args: SupplierPaidArgs; offerId: string; lender: string; txHash: `0x${string}`; learned: boolean }

class World {
  engine: Engine
  readonly wallets = new FakeWallets()
  readonly store = new Map<string, Change>()
  readonly model = new FacilityModel({ address: FACILITY, operator: OPERATOR, leaseSigner: LEASE_SIGNER, reclaimDelay: devnetReclaimDelaySeconds })
  /** Events mined and not yet delivered to the engine by the follower, in chain order. */
  pending: { event: ModelEvent; txHash: `0x${string}`; logIndex: number }[] = []
  /** Proofs of facts a report applied: the service skips them in the follower's batch (credit-service.ts observeChain). */
  readonly usedProofs = new Set<string>()
  readonly paid = new Map<string, Paid>()
  /** Offers a job failure withdrew (declined, or closing while leased): the generator guard counts their payments. */
  readonly withdrawn = new Set<string>()
  readonly totalSupply: bigint
  nowMs = T0
  tx = 0
  /** Checks that saw an advance in shortfall, repayments of one, collateral only the follower learned (the generator must reach them). */
  readonly seen = { shortfall: 0, repaidAfterShortfall: 0, collateralFollowed: 0 }
  log: string[] = []

  constructor() {
    this.engine = new Engine(config, this.wallets)
    this.keep(seedSuppliers(this.engine))
    for (const lender of LENDERS) this.keep(this.ok(this.engine.registerLender(lender, T0)))
    this.keep(this.ok(this.engine.registerSource({
      sourceId: 'src_1', productType: 'asset-backed', agent: BORROWER, valueAtomic: 100_000n, liquidationValueAtomic: 100_000n,
      advanceRateBps: 10_000, evidenceId: 'ev_src_1', validUntilMs: 8_000_000_000_000, caller: BORROWER,
    }, T0)))
    for (const holder of HOLDERS) {
      if (holder === FACILITY) continue
      this.model.setBalance(TOKEN, holder, 1_000_000n)
      this.model.setAllowance(TOKEN, holder, FACILITY, 10n ** 30n)
    }
    for (const job of JOBS) {
      this.keep(this.ok(this.engine.createJob({
        jobId: job.jobId, jobKey: legacyJobKey(job.jobId), client: CLIENT, borrower: job.borrower, network: NET, asset: ASSET, receivableAtomic: job.receivable, dueAtMs: T0 + job.dueMs,
        funding: { network: NET, txHash: this.nextTx(), logIndex: 0 }, caller: CLIENT,
      }, T0)))
      this.mustOk(this.model.fundJob(this.ctx(CLIENT), legacyJobKey(job.jobId), TOKEN, job.receivable, job.borrower))
    }
    this.totalSupply = this.supply()
  }

  ok<T>(r: { ok: true; value: T; changes: Change[] } | { ok: false; error: { code: string; message: string } }): Change[] {
    if (!r.ok) throw new Error(`engine refused: ${r.error.code}: ${r.error.message}`)
    return r.changes
  }

  mustOk(outcome: ReturnType<FacilityModel['repay']>): ModelEvent[] {
    if (!outcome.ok) throw new Error(`model reverted: ${outcome.error}`)
    return outcome.events
  }

  keep(changes: Change[]): void {
    applyChanges(this.store, changes)
  }

  /** Applies an engine result's changes to the store when it succeeded; answers whether it did. */
  take(r: { ok: boolean; changes?: Change[] }): boolean {
    if (r.ok && r.changes) this.keep(r.changes)
    return r.ok
  }

  ctx(sender: string): { sender: ChainAddress; nowSeconds: bigint } {
    return { sender: getAddress(sender) as ChainAddress, nowSeconds: BigInt(Math.floor(this.nowMs / 1000)) }
  }

  nextTx(): `0x${string}` {
    return hash(0x10000 + this.tx++)
  }

  supply(): bigint {
    return HOLDERS.reduce((sum, h) => sum + this.model.balanceOf(TOKEN, h), 0n)
  }

  /** The advance of `advanceKey` as the store holds it (live or ended). */
  storedAdvance(advanceKey: string): AdvanceView | undefined {
    for (const c of this.store.values()) {
      if (c.kind !== 'advance') continue
      const a = advanceViewFromSnapshot(c.record)
      if (a.advanceKey === advanceKey) return a
    }
    return undefined
  }

  liveAdvances(): AdvanceView[] {
    return this.engine.snapshots().filter((c) => c.kind === 'advance').map((c) => this.engine.getAdvance(c.id) as AdvanceView)
  }

  /** The chain follower's batch: every pending event, then chain time now (what credit-service.ts observeChain maps). */
  observe(): void {
    const batch = this.pending.filter(({ txHash, logIndex }) => !this.usedProofs.has(`${txHash}:${logIndex}`))
    const events: ChainEventFact[] = batch.map(({ event, txHash, logIndex }) => {
      const proofKey = `${txHash}:${logIndex}`
      if (event.name === 'Repaid') {
        const a = event.args as RepaidArgs
        return {
          kind: 'repaid', proofKey, advanceKey: a.offerKey, network: NET, txHash, logIndex, payer: getAddress(a.payer), lender: getAddress(a.lender),
          amountAtomic: a.toLender, reserveAmountAtomic: a.toReserve, lenderOwedAtomic: a.lenderOwed, reserveOwedAtomic: a.reserveOwed,
        }
      }
      if (event.name === 'CollateralPosted') {
        const a = event.args as CollateralPostedArgs
        return {
          kind: 'collateral_posted', proofKey, jobKey: a.jobKey, asset: ASSET, borrower: getAddress(a.borrower), amountAtomic: a.amount,
          proof: { network: NET, txHash, logIndex },
        }
      }
      if (event.name !== 'SupplierPaid') return { kind: 'other', name: event.name, proofKey }
      const a = event.args as SupplierPaidArgs
      return {
        kind: 'supplier_paid', proofKey, offerKey: a.offerKey, network: NET, txHash, logIndex, payer: getAddress(a.payer),
        supplier: getAddress(a.supplier), asset: ASSET, amountAtomic: a.amount,
      }
    })
    const pastLease = (leaseId: string) => {
      const c = this.store.get(`lease:${leaseId}`)
      return c === undefined ? undefined : leaseViewFromSnapshot(c.record)
    }
    const e = this.engine
    const r = e.observeChain({ network: NET, toBlock: BigInt(this.nowMs), toBlockHash: '0x', toBlockTimeMs: this.nowMs, events }, this.nowMs, pastLease)
    if (!r.ok) throw new Error(`observeChain refused: ${r.error.code}`)
    this.keep(r.changes)
    // A payment the engine had already learned by report is ignored (offer_not_live); any other SupplierPaid the
    // contract accepted must fund its offer. A Repaid is ignored only when its advance ended repaid before it (its
    // report came first): a repayment after a liquidation's shortfall must be counted, not ignored.
    const ignored = new Map(r.value.ignored.map((x) => [x.proofKey, x.reason]))
    events.forEach((fact, n) => {
      const reason = ignored.get(fact.proofKey)
      if (fact.kind === 'collateral_posted') {
        // Posted while the job was open on chain: only a job the engine already ended (failed with nothing left, so
        // the contract closed it and gave the collateral back) has nothing to hold it.
        const jobId = JOBS.find((j) => legacyJobKey(j.jobId) === fact.jobKey)?.jobId as string
        if (reason === undefined) this.seen.collateralFollowed++
        else if (reason !== 'job_not_live' || e.getJob(jobId) !== undefined) throw new Error(`the engine ignored CollateralPosted ${fact.proofKey} of ${jobId}: ${reason}`)
        return
      }
      if (fact.kind !== 'supplier_paid') {
        if (reason === undefined || reason.startsWith('not_applied:')) return
        const stored = fact.kind === 'repaid' ? this.storedAdvance(fact.advanceKey) : undefined
        if (reason === 'advance_not_live' && stored?.state === 'repaid') return
        throw new Error(`the engine ignored ${fact.proofKey}: ${reason} (advance ${stored?.advanceId} ${stored?.state})`)
      }
      const p = this.paid.get(fact.offerKey) as Paid
      if (reason !== undefined && !(p.learned && reason === 'offer_not_live')) {
        throw new Error(`the engine ignored SupplierPaid ${fact.offerKey} (${n}) the contract accepted: ${reason}`)
      }
      p.learned = true
    })
    this.pending = []
  }

  reportPayment(p: Paid): void {
    const a = p.args
    const r = this.engine.recordSupplierPayment({
      network: NET, txHash: p.txHash, logIndex: 0, offerId: p.offerId, payer: getAddress(a.payer), supplier: getAddress(a.supplier),
      asset: ASSET, amountAtomic: a.amount, caller: p.lender as ChainAddress,
    }, this.nowMs)
    if (this.take(r)) {
      p.learned = true
      this.usedProofs.add(`${p.txHash}:0`)
    }
  }

  apply(cmd: Cmd): void {
    const e = this.engine
    switch (cmd.c) {
      case 'request': {
        const job = JOBS[cmd.job - 1]
        const decision = e.requestCredit(creditRequest({ agent: job?.borrower ?? BORROWER, amountAtomic: BigInt(cmd.amount), maximumFeeAtomic: BigInt(cmd.maxFee), repaymentSource: job ? job.jobId : 'src_1' }), this.nowMs)
        if (!this.take(decision) || !decision.ok || !decision.value.offer) return
        this.take(e.matchOffer({ offerId: decision.value.offer.offerId, caller: job?.borrower ?? BORROWER }, this.nowMs))
        return
      }
      case 'dispatch':
        this.take(e.dispatch(this.nowMs))
        return
      case 'pay': {
        // A lender pays the supplier on chain with the authorization the service signed for one of its leases, live or
        // ended (expired, rematched, paid): the contract decides by the deadline and the offer's key alone, and by
        // the job (a failed job's authorizations are refused). An offer withdrawn while leased (its borrower suspended
        // by a failure) is closing: a payment under its authorization funds it like any other.
        const leases = [...this.store.values()].filter((c) => c.kind === 'lease').map((c) => leaseViewFromSnapshot(c.record))
          .filter((l) => cmd.stale || e.getLease(l.leaseId) !== undefined)
        const lease = leases[cmd.i % Math.max(1, leases.length)]
        if (!lease) return
        const stored = this.store.get(`offer:${lease.offerId}`)
        if (!stored) return
        const offer = offerViewFromSnapshot(stored.record)
        const auth: LeaseAuthorization = {
          offerKey: offer.offerKey, jobKey: offer.source.kind === 'job' ? legacyJobKey(offer.source.id) : zeroHash,
          payer: lease.payer, supplier: lease.supplierAddress, asset: TOKEN, amount: lease.amountAtomic, fee: lease.feeAtomic,
          reserveShare: insuranceAtomic(lease.feeAtomic, config.insuranceShareBps),
          deadline: BigInt(Math.floor(lease.expiresAtMs / 1000)), dueAt: BigInt(Math.floor(offer.dueAtMs / 1000)),
        }
        const outcome = this.model.paySupplier(this.ctx(lease.payer), auth, { recovered: LEASE_SIGNER })
        if (!outcome.ok) return
        const txHash = this.nextTx()
        const event = outcome.events.find((ev) => ev.name === 'SupplierPaid') as ModelEvent
        const p: Paid = { args: event.args as SupplierPaidArgs, offerId: offer.offerId, lender: lease.lender, txHash, learned: false }
        this.paid.set(offer.offerKey, p)
        outcome.events.forEach((ev, logIndex) => this.pending.push({ event: ev, txHash, logIndex }))
        if (cmd.learn !== 'follower') this.reportPayment(p)
        if (cmd.learn === 'both') this.observe()
        return
      }
      case 'report': {
        // A report of a payment already mined: first, late, or again after the report or the follower.
        const all = [...this.paid.values()]
        const p = all[cmd.i % Math.max(1, all.length)]
        if (p) this.reportPayment(p)
        return
      }
      case 'observe':
        this.observe()
        return
      case 'repay': {
        const keys = this.model.offerKeys().filter((k) => { const a = this.model.getAdvance(k); return a.lenderOwed + a.reserveOwed > 0n })
        const key = keys[cmd.i % Math.max(1, keys.length)]
        if (!key) return
        const a = this.model.getAdvance(key)
        const owed = a.lenderOwed + a.reserveOwed
        const amount = cmd.how === 'partial' ? (owed + 1n) / 2n : cmd.how === 'exact' ? owed : owed + 7n
        const outcome = this.model.repay(this.ctx(BORROWER), key, amount)
        if (!outcome.ok) return
        if (a.liquidated) this.seen.repaidAfterShortfall++
        const txHash = this.nextTx()
        outcome.events.forEach((ev, logIndex) => this.pending.push({ event: ev, txHash, logIndex }))
        const repaid = outcome.events.find((ev) => ev.name === 'Repaid') as ModelEvent
        const advance = e.advanceByKey(key)
        if (cmd.report && advance) {
          const r = repaid.args as RepaidArgs
          const logIndex = outcome.events.indexOf(repaid)
          if (this.take(e.repayAdvance({
            network: NET, txHash, logIndex, advanceId: advance.advanceId, lender: getAddress(r.lender), payer: getAddress(r.payer),
            amountAtomic: r.toLender, reserveAmountAtomic: r.toReserve, lenderOwedAtomic: r.lenderOwed, reserveOwedAtomic: r.reserveOwed,
          }, this.nowMs))) this.usedProofs.add(`${txHash}:${logIndex}`)
        }
        return
      }
      case 'collateral': {
        // The job's borrower posts collateral on chain; the engine learns it by its report, or only from the follower.
        const job = JOBS[cmd.i] as (typeof JOBS)[number]
        const outcome = this.model.postCollateral(this.ctx(job.borrower), legacyJobKey(job.jobId), TOKEN, BigInt(cmd.amount))
        if (!outcome.ok) return
        const txHash = this.nextTx()
        outcome.events.forEach((ev, logIndex) => this.pending.push({ event: ev, txHash, logIndex }))
        const logIndex = outcome.events.findIndex((ev) => ev.name === 'CollateralPosted')
        if (cmd.report && this.take(e.postCollateral({
          jobId: job.jobId, caller: job.borrower, borrower: job.borrower, amountAtomic: BigInt(cmd.amount), proof: { network: NET, txHash, logIndex },
        }, this.nowMs))) this.usedProofs.add(`${txHash}:${logIndex}`)
        return
      }
      case 'complete': {
        const { jobId } = JOBS[cmd.i] as (typeof JOBS)[number]
        this.observe()
        const plan = e.planJobSettlement({ jobId, caller: CLIENT })
        if (!plan.ok) return
        // In the order the operator sends them (sendSettleJob): the contract takes the keys ascending.
        const offerKeys = ascendingKeys(plan.value.advances.map((a) => (e.getAdvance(a.advanceId) as AdvanceView).advanceKey))
        const outcome = this.model.settleJob(this.ctx(OPERATOR), legacyJobKey(jobId), offerKeys)
        if (!outcome.ok) throw new Error(`the engine planned a settlement of ${jobId} the contract refuses: ${outcome.error}`)
        const settled = outcome.events.find((ev) => ev.name === 'JobSettled') as ModelEvent
        if (settled.args.toBorrower !== plan.value.toBorrowerAtomic || settled.args.toLenders !== plan.value.toLendersAtomic || settled.args.toReserve !== plan.value.toReserveAtomic) {
          throw new Error(`settlement of ${jobId}: engine planned ${plan.value.toLendersAtomic}/${plan.value.toReserveAtomic}/${plan.value.toBorrowerAtomic}, contract paid ${settled.args.toLenders}/${settled.args.toReserve}/${settled.args.toBorrower}`)
        }
        this.keep(this.ok(e.completeJob({ jobId, caller: CLIENT, network: NET, txHash: this.nextTx() }, this.nowMs)))
        return
      }
      case 'fail': {
        const { jobId } = JOBS[cmd.i] as (typeof JOBS)[number]
        // Payments still unseen by the follower stay pending: a SupplierPaid mined before failJob and learned after
        // it funds an offer failJob withdrew (closing), and its advance is the failed job's, defaulted.
        const plan = e.planJobFailure({ jobId, reason: 'not_delivered', caller: CLIENT })
        if (!plan.ok) return
        const outcome = this.model.failJob(this.ctx(OPERATOR), legacyJobKey(jobId))
        if (!outcome.ok) throw new Error(`the engine would fail ${jobId}, the contract refuses: ${outcome.error}`)
        const failed = e.failJob({ jobId, reason: 'not_delivered', caller: CLIENT }, this.nowMs)
        this.keep(this.ok(failed))
        if (failed.ok) for (const offerId of failed.value.declinedOfferIds) this.withdrawn.add(offerId)
        return
      }
      case 'liquidate': {
        this.observe()
        const live = this.liveAdvances()
        const advance = live[cmd.i % Math.max(1, live.length)]
        if (!advance) return
        const plan = e.planLiquidation({ advanceId: advance.advanceId, caller: advance.lender }, this.nowMs)
        if (!plan.ok) return
        const outcome = this.model.liquidate(this.ctx(OPERATOR), advance.advanceKey, recoveryAmounts(plan.value).fromBackingAtomic)
        // The engine's due date is in ms, the contract's in whole seconds: past due from the next second on, for both.
        if (!outcome.ok) {
          throw new Error(`the engine would liquidate ${advance.advanceId}, the contract refuses: ${outcome.error}`)
        }
        const l = (outcome.events.find((ev) => ev.name === 'Liquidated') as ModelEvent).args as Record<string, bigint>
        this.keep(this.ok(e.liquidate({
          advanceId: advance.advanceId, caller: advance.lender, network: NET, txHash: this.nextTx(),
          executed: { fromCollateralAtomic: l.fromCollateral as bigint, fromBackingAtomic: l.fromBacking as bigint, fromReserveAtomic: l.fromReserve as bigint, shortfallAtomic: l.shortfall as bigint },
        }, this.nowMs)))
        return
      }
      case 'restart':
        this.engine = new Engine(config, this.wallets, this.store.values())
        return
    }
  }

  check(): void {
    this.engine.checkInvariants()
    // (1) each SupplierPaid is backed by exactly one engine advance (live or ended: the store keeps ended ones), with
    // the same principal, fee and payer; and no engine advance lacks its SupplierPaid.
    const byKey = new Map<string, AdvanceView[]>()
    for (const c of this.store.values()) {
      if (c.kind !== 'advance') continue
      const a = advanceViewFromSnapshot(c.record)
      byKey.set(a.advanceKey, [...(byKey.get(a.advanceKey) ?? []), a])
    }
    for (const [key, advances] of byKey) {
      const p = this.paid.get(key)
      if (!p) throw new Error(`engine advance ${key} has no SupplierPaid`)
      if (advances.length !== 1) throw new Error(`SupplierPaid ${key} is backed by ${advances.length} advances`)
      const a = advances[0] as AdvanceView
      if (a.principalAtomic !== p.args.amount || a.feeAtomic !== p.args.fee || getAddress(a.payer) !== p.args.payer || a.insuranceAtomic !== p.args.reserveShare) {
        throw new Error(`advance ${key}: engine ${a.principalAtomic}/${a.feeAtomic}/${a.payer}, chain ${p.args.amount}/${p.args.fee}/${p.args.payer}`)
      }
    }
    for (const [key, p] of this.paid) if (p.learned && !byKey.has(key)) throw new Error(`SupplierPaid ${key} was learned but no advance backs it`)
    // (1b) a borrower's shortfallAtomic is what its advances in shortfall still owe of their shortfalls, each its own
    // min(shortfall, owed) (review28, after money26): a repayment lowers it by what it repaid of its own advance's
    // shortfall only, never another advance's, never below 0, and the last payment of each takes all of its part.
    const unpaid = new Map<string, bigint>()
    for (const [, [a]] of byKey) {
      if (a?.state !== 'shortfall' || a.recovery === null) continue
      const owed = a.lenderOwedAtomic + a.reserveOwedAtomic
      const part = owed < a.recovery.shortfallAtomic ? owed : a.recovery.shortfallAtomic
      unpaid.set(a.borrower, (unpaid.get(a.borrower) ?? 0n) + part)
    }
    for (const borrower of new Set([...byKey.values()].map(([a]) => (a as AdvanceView).borrower))) {
      const recorded = this.engine.getBorrower(borrower)?.shortfallAtomic ?? 0n
      if (recorded !== (unpaid.get(borrower) ?? 0n)) throw new Error(`borrower ${borrower} records a shortfall of ${recorded}, its shortfall advances still owe ${unpaid.get(borrower) ?? 0n} of theirs`)
    }
    // (2) once the engine has every event, each advance (live or ended: a repayment after a liquidation's shortfall
    // counts too) owes what the contract says it owes, and the insurance reserve holds what the contract's does.
    if (this.pending.length === 0) {
      for (const [key, [a]] of byKey) {
        const m = this.model.getAdvance(key as `0x${string}`)
        if ((a as AdvanceView).lenderOwedAtomic !== m.lenderOwed || (a as AdvanceView).reserveOwedAtomic !== m.reserveOwed) {
          throw new Error(`advance ${a?.advanceId} (${a?.state}) owes ${a?.lenderOwedAtomic}+${a?.reserveOwedAtomic}, the contract ${m.lenderOwed}+${m.reserveOwed}`)
        }
        if (a?.state === 'shortfall') this.seen.shortfall++
      }
      const reserve = this.engine.creditState().reserves.find((r) => r.network === NET && r.asset === ASSET)?.balanceAtomic ?? 0n
      if (reserve !== this.model.reserveOf(TOKEN)) throw new Error(`the engine's reserve holds ${reserve}, the contract's ${this.model.reserveOf(TOKEN)}`)
    }
    // (3) a final job holds nothing; tokens are only moved; the facility holds exactly escrow, collateral and reserve.
    let held = 0n
    for (const key of this.model.jobKeys()) {
      const j = this.model.getJob(key)
      if ((j.status === JobStatus.Settled || j.status === JobStatus.Closed) && j.escrow + j.collateral !== 0n) throw new Error(`final job ${key} holds ${j.escrow}+${j.collateral}`)
      held += j.escrow + j.collateral
    }
    if (this.supply() !== this.totalSupply) throw new Error(`token supply ${this.supply()} != ${this.totalSupply}`)
    const facility = this.model.balanceOf(TOKEN, FACILITY)
    if (facility !== held + this.model.reserveOf(TOKEN)) throw new Error(`facility holds ${facility}, jobs ${held} + reserve ${this.model.reserveOf(TOKEN)}`)
  }
}

function run(log: Step[]): World {
  const world = new World()
  world.check()
  for (const [n, { dtMs, cmd }] of log.entries()) {
    world.nowMs += dtMs
    try {
      world.apply(cmd)
      world.check()
    } catch (error) {
      throw new Error(`step ${n} ${JSON.stringify(cmd)}: ${(error as Error).message}`)
    }
  }
  world.observe()
  world.check()
  return world
}

// MONEY_RUNS and MONEY_SEED run the property longer or replay one seed (fast-check prints the seed of a failure).
const RUNS = Number(process.env['MONEY_RUNS'] ?? 100)
const SEED = process.env['MONEY_SEED'] === undefined ? undefined : Number(process.env['MONEY_SEED'])

t.test('the engine agrees with the contract after every step of random money interleavings', async (t) => {
  fc.assert(fc.property(logArb, (log) => {
    run(log)
    return true
  }), { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) })
  t.pass(`${RUNS} runs of 30 steps`)
})

t.test('the generator reaches the money paths', async (t) => {
  // Guard against a generator that never pays, repays or liquidates: the property above would then prove little.
  const seen = { payments: 0, advances: 0, repaid: 0, liquidated: 0, settled: 0, failed: 0, paidAfterWithdrawal: 0, shortfallChecked: 0, repaidAfterShortfall: 0, collateralFollowed: 0 }
  fc.assert(fc.property(logArb, (log) => {
    const world = run(log)
    for (const c of world.store.values()) {
      if (c.kind !== 'advance') continue
      const a = advanceViewFromSnapshot(c.record)
      seen.advances++
      if (a.state === 'repaid') seen.repaid++
      if (a.state === 'liquidated' || a.state === 'shortfall') seen.liquidated++
    }
    seen.payments += world.paid.size
    seen.paidAfterWithdrawal += [...world.paid.values()].filter((p) => world.withdrawn.has(p.offerId)).length
    seen.shortfallChecked += world.seen.shortfall
    seen.repaidAfterShortfall += world.seen.repaidAfterShortfall
    seen.collateralFollowed += world.seen.collateralFollowed
    for (const key of world.model.jobKeys()) {
      const status = world.model.getJob(key).status
      if (status === JobStatus.Settled) seen.settled++
      if (status === JobStatus.Failed || status === JobStatus.Closed) seen.failed++
    }
    return true
  }), { numRuns: 40, seed: 1 })
  for (const [path, count] of Object.entries(seen)) t.ok(count > 0, `${path}: ${count}`)
})
