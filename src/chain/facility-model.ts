// A faithful TypeScript model of CreditFacilityV2 (src/chain/contracts/CreditFacilityV2.sol) and of the OpenZeppelin
// ERC-20 it moves: the same state, the same functions with the same checks in the same order, the same custom errors
// (name and arguments) and the same events. Pure and synchronous, for the engine's property test; kept honest by
// test/chain/facility-model.test.ts, which runs random call sequences on anvil and on the model and requires identical
// outcomes and state after every step. A call that reverts changes nothing (the model works on a copy).
import { getAddress, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import type { LeaseAuthorization } from './lease-authorization.ts'

export const JobStatus = { None: 0, Open: 1, Settled: 2, Failed: 3, Closed: 4, Reclaimed: 5 } as const
export type JobStatusCode = (typeof JobStatus)[keyof typeof JobStatus]

export type ModelJob = {
  client: Address
  borrower: Address
  asset: Address
  escrow: bigint
  collateral: bigint
  outstanding: bigint
  unresolved: bigint
  status: JobStatusCode
  fundedAt: bigint
  advanced: boolean
}

export type ModelAdvance = {
  jobKey: Hex
  lender: Address
  asset: Address
  dueAt: bigint
  lenderOwed: bigint
  reserveOwed: bigint
  liquidated: boolean
  exists: boolean
}

/** The lease authorization's terms, exactly as the contract's struct (the model takes the signature's recovery apart). */
export type ModelLease = LeaseAuthorization

/** What ECDSA recovery gives for the signature: the recovering address, or 'malformed' (bad length, high s). */
export type ModelSignature = { recovered: Address } | 'malformed'

export type ModelEvent = { name: string; args: Record<string, unknown> }
export type ModelOutcome = { ok: true; events: ModelEvent[] } | { ok: false; error: string; args: unknown[] }

/** A call's context: who sends it and the block's timestamp (unix seconds). */
export type ModelContext = { sender: Address; nowSeconds: bigint }

const uint256Max = 2n ** 256n - 1n

class Revert extends Error {
  constructor(
    readonly errorName: string,
    readonly errorArgs: unknown[],
  ) {
    super(errorName)
  }
}

function revert(name: string, ...args: unknown[]): never {
  throw new Revert(name, args)
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b)

/** ERC-20 balances and allowances of the tokens the facility moves (OpenZeppelin 5 semantics and errors). */
export type TokenState = {
  balances: Map<string, bigint>
  allowances: Map<string, bigint>
}

function emptyJob(): ModelJob {
  return {
    client: zeroAddress, borrower: zeroAddress, asset: zeroAddress, escrow: 0n, collateral: 0n, outstanding: 0n, unresolved: 0n, status: JobStatus.None,
    fundedAt: 0n, advanced: false,
  }
}

function emptyAdvance(): ModelAdvance {
  return { jobKey: zeroHash, lender: zeroAddress, asset: zeroAddress, dueAt: 0n, lenderOwed: 0n, reserveOwed: 0n, liquidated: false, exists: false }
}

export type FacilityModelState = {
  jobs: Map<Hex, ModelJob>
  advances: Map<Hex, ModelAdvance>
  reserveOf: Map<Address, bigint>
  /** heldFor by `${asset}:${account}` (lower case), and heldOf by asset. */
  heldFor: Map<string, bigint>
  heldOf: Map<Address, bigint>
  tokens: TokenState
}

function cloneState(s: FacilityModelState): FacilityModelState {
  return {
    jobs: new Map([...s.jobs].map(([k, v]) => [k, { ...v }])),
    advances: new Map([...s.advances].map(([k, v]) => [k, { ...v }])),
    reserveOf: new Map(s.reserveOf),
    heldFor: new Map(s.heldFor),
    heldOf: new Map(s.heldOf),
    tokens: { balances: new Map(s.tokens.balances), allowances: new Map(s.tokens.allowances) },
  }
}

const key = (hex: string): Hex => hex.toLowerCase() as Hex
const tokenKey = (asset: Address, holder: Address): string => `${key(asset)}:${key(holder)}`
const allowanceKey = (asset: Address, owner: Address, spender: Address): string => `${key(asset)}:${key(owner)}:${key(spender)}`

export class FacilityModel {
  readonly address: Address
  readonly operator: Address
  readonly leaseSigner: Address
  readonly reclaimDelay: bigint
  readonly advancesPerJobMax: bigint
  /** Accounts the token refuses (USDC's blacklist: TestStablecoin's blacklist), lower case. */
  readonly #refused = new Set<string>()
  #state: FacilityModelState

  /** `advancesPerJobMax`: the contract's constructor argument, default 500 (the devnet's, the engine's default). */
  constructor(roles: { address: Address; operator: Address; leaseSigner: Address; reclaimDelay: bigint; advancesPerJobMax?: bigint }) {
    const advancesPerJobMax = roles.advancesPerJobMax ?? 500n
    if (roles.operator === zeroAddress || roles.leaseSigner === zeroAddress) revert('ZeroAddress')
    if (roles.reclaimDelay === 0n) revert('ZeroDelay')
    if (advancesPerJobMax === 0n) revert('ZeroAmount')
    if (key(roles.operator) === key(roles.leaseSigner)) revert('RolesNotSeparate', getAddress(roles.operator))
    this.address = getAddress(roles.address)
    this.operator = getAddress(roles.operator)
    this.leaseSigner = getAddress(roles.leaseSigner)
    this.reclaimDelay = roles.reclaimDelay
    this.advancesPerJobMax = advancesPerJobMax
    this.#state = {
      jobs: new Map(), advances: new Map(), reserveOf: new Map(), heldFor: new Map(), heldOf: new Map(),
      tokens: { balances: new Map(), allowances: new Map() },
    }
  }

  // ------------------------------------------------------------------ token side (what the test or engine sets up)

  setBalance(asset: Address, holder: Address, amount: bigint): void {
    this.#state.tokens.balances.set(tokenKey(asset, holder), amount)
  }

  setAllowance(asset: Address, owner: Address, spender: Address, amount: bigint): void {
    this.#state.tokens.allowances.set(allowanceKey(asset, owner, spender), amount)
  }

  balanceOf(asset: Address, holder: Address): bigint {
    return this.#state.tokens.balances.get(tokenKey(asset, holder)) ?? 0n
  }

  allowance(asset: Address, owner: Address, spender: Address): bigint {
    return this.#state.tokens.allowances.get(allowanceKey(asset, owner, spender)) ?? 0n
  }

  /** The token's blacklist (every asset alike): a transfer from, to or sent by a refused account reverts. */
  setRefused(account: Address, refused: boolean): void {
    if (refused) this.#refused.add(key(account))
    else this.#refused.delete(key(account))
  }

  // ------------------------------------------------------------------ views

  getJob(jobKey: Hex): ModelJob {
    return { ...(this.#state.jobs.get(key(jobKey)) ?? emptyJob()) }
  }

  getAdvance(offerKey: Hex): ModelAdvance {
    return { ...(this.#state.advances.get(key(offerKey)) ?? emptyAdvance()) }
  }

  reserveOf(asset: Address): bigint {
    return this.#state.reserveOf.get(getAddress(asset)) ?? 0n
  }

  heldFor(asset: Address, account: Address): bigint {
    return this.#state.heldFor.get(tokenKey(asset, account)) ?? 0n
  }

  heldOf(asset: Address): bigint {
    return this.#state.heldOf.get(getAddress(asset)) ?? 0n
  }

  jobKeys(): Hex[] {
    return [...this.#state.jobs.keys()]
  }

  offerKeys(): Hex[] {
    return [...this.#state.advances.keys()]
  }

  // ------------------------------------------------------------------ functions

  fundJob(ctx: ModelContext, jobKey: Hex, asset: Address, amount: bigint, borrower: Address): ModelOutcome {
    return this.#run((s, emit) => {
      if (jobKey === zeroHash) revert('ZeroKey')
      if (asset === zeroAddress || borrower === zeroAddress) revert('ZeroAddress')
      if (amount === 0n) revert('ZeroAmount')
      const job = this.#job(s, jobKey)
      if (job.status !== JobStatus.None) revert('JobAlreadyFunded', key(jobKey))
      Object.assign(job, { client: getAddress(ctx.sender), borrower: getAddress(borrower), asset: getAddress(asset), escrow: amount, status: JobStatus.Open, fundedAt: ctx.nowSeconds })
      this.#transferFrom(s, asset, ctx.sender, this.address, amount)
      emit('JobFunded', { jobKey: key(jobKey), client: getAddress(ctx.sender), borrower: getAddress(borrower), asset: getAddress(asset), amount })
    })
  }

  postCollateral(ctx: ModelContext, jobKey: Hex, asset: Address, amount: bigint): ModelOutcome {
    return this.#run((s, emit) => {
      const job = this.#openJob(s, jobKey)
      if (key(ctx.sender) !== key(job.borrower)) revert('NotBorrower', getAddress(ctx.sender))
      if (key(asset) !== key(job.asset)) revert('AssetMismatch', job.asset, getAddress(asset))
      if (amount === 0n) revert('ZeroAmount')
      job.collateral += amount
      this.#transferFrom(s, asset, ctx.sender, this.address, amount)
      emit('CollateralPosted', { jobKey: key(jobKey), borrower: getAddress(ctx.sender), asset: getAddress(asset), amount })
    })
  }

  paySupplier(ctx: ModelContext, a: ModelLease, signature: ModelSignature): ModelOutcome {
    return this.#run((s, emit) => {
      if (key(ctx.sender) !== key(a.payer)) revert('NotPayer', getAddress(ctx.sender), getAddress(a.payer))
      if (ctx.nowSeconds > a.deadline) revert('DeadlinePassed', a.deadline, ctx.nowSeconds)
      if (a.offerKey === zeroHash) revert('ZeroKey')
      if (this.#advance(s, a.offerKey).exists) revert('OfferAlreadyPaid', key(a.offerKey))
      if (signature === 'malformed') revert('MalformedLeaseSignature')
      if (key(signature.recovered) !== key(this.leaseSigner)) revert('WrongLeaseSigner', getAddress(signature.recovered))
      if (a.amount === 0n) revert('ZeroAmount')
      if (a.asset === zeroAddress) revert('ZeroAddress')
      if (a.reserveShare > a.fee) revert('ReserveOverFee', a.reserveShare, a.fee)
      if (a.supplier === zeroAddress || key(a.supplier) === key(this.address) || key(a.supplier) === key(a.payer)) {
        revert('InvalidSupplier', getAddress(a.supplier))
      }
      if (a.jobKey !== zeroHash) {
        const job = this.#openJob(s, a.jobKey)
        if (key(a.asset) !== key(job.asset)) revert('AssetMismatch', job.asset, getAddress(a.asset))
        if (key(a.supplier) === key(job.borrower)) revert('InvalidSupplier', getAddress(a.supplier))
        if (job.outstanding >= this.advancesPerJobMax) revert('TooManyAdvances', key(a.jobKey), this.advancesPerJobMax)
        job.outstanding += 1n
        job.unresolved += 1n
        job.advanced = true
      }
      const lenderOwed = a.amount + a.fee - a.reserveShare
      if (lenderOwed > uint256Max) revert('Panic', 0x11n)
      s.advances.set(key(a.offerKey), {
        jobKey: key(a.jobKey),
        lender: getAddress(a.payer),
        asset: getAddress(a.asset),
        dueAt: a.dueAt,
        lenderOwed,
        reserveOwed: a.reserveShare,
        liquidated: false,
        exists: true,
      })
      if (!this.#tryTransferFrom(s, a.asset, a.payer, a.supplier, a.amount)) {
        this.#transferFrom(s, a.asset, a.payer, this.address, a.amount)
        this.#hold(s, a.asset, a.supplier, a.amount, emit)
      }
      emit('SupplierPaid', {
        offerKey: key(a.offerKey), payer: getAddress(a.payer), supplier: getAddress(a.supplier), jobKey: key(a.jobKey),
        asset: getAddress(a.asset), amount: a.amount, fee: a.fee, reserveShare: a.reserveShare, dueAt: a.dueAt,
      })
    })
  }

  repay(ctx: ModelContext, offerKey: Hex, amount: bigint): ModelOutcome {
    return this.#run((s, emit) => {
      if (amount === 0n) revert('ZeroAmount')
      const adv = this.#owingAdvance(s, offerKey)
      const toLender = min(amount, adv.lenderOwed)
      const toReserve = min(amount - toLender, adv.reserveOwed)
      adv.lenderOwed -= toLender
      adv.reserveOwed -= toReserve
      this.#addReserve(s, adv.asset, toReserve)
      if (toLender > 0n && !this.#tryTransferFrom(s, adv.asset, ctx.sender, adv.lender, toLender)) {
        this.#transferFrom(s, adv.asset, ctx.sender, this.address, toLender)
        this.#hold(s, adv.asset, adv.lender, toLender, emit)
      }
      if (toReserve > 0n) this.#transferFrom(s, adv.asset, ctx.sender, this.address, toReserve)
      emit('Repaid', {
        offerKey: key(offerKey), payer: getAddress(ctx.sender), lender: adv.lender, toLender, toReserve,
        lenderOwed: adv.lenderOwed, reserveOwed: adv.reserveOwed,
      })
      if (adv.lenderOwed === 0n && adv.reserveOwed === 0n) this.#resolveRepaid(s, adv, emit)
    })
  }

  settleJob(ctx: ModelContext, jobKey: Hex, offerKeys: readonly Hex[]): ModelOutcome {
    return this.#run((s, emit) => {
      this.#onlyOperator(ctx)
      const job = this.#openJob(s, jobKey)
      if (BigInt(offerKeys.length) !== job.outstanding) revert('AdvanceCountMismatch', BigInt(offerKeys.length), job.outstanding)
      let owed = 0n
      offerKeys.forEach((offerKey, i) => {
        const adv = this.#owingAdvance(s, offerKey)
        if (adv.jobKey !== key(jobKey)) revert('AdvanceOfOtherJob', key(offerKey), adv.jobKey)
        if (i > 0 && BigInt(offerKey) <= BigInt(offerKeys[i - 1] as Hex)) {
          revert(BigInt(offerKey) === BigInt(offerKeys[i - 1] as Hex) ? 'DuplicateAdvance' : 'AdvancesNotAscending', key(offerKey))
        }
        owed += adv.lenderOwed + adv.reserveOwed
      })
      const held = job.escrow + job.collateral
      if (owed > held) revert('Underfunded', owed, held)
      let toLenders = 0n
      let toReserve = 0n
      for (const offerKey of offerKeys) {
        const adv = this.#advance(s, offerKey)
        const toLender = adv.lenderOwed
        const share = adv.reserveOwed
        adv.lenderOwed = 0n
        adv.reserveOwed = 0n
        toLenders += toLender
        toReserve += share
        if (toLender > 0n) this.#pay(s, job.asset, adv.lender, toLender, emit)
        emit('AdvanceSettled', { offerKey: key(offerKey), jobKey: key(jobKey), lender: adv.lender, toLender, toReserve: share })
      }
      const toBorrower = held - owed
      Object.assign(job, { escrow: 0n, collateral: 0n, outstanding: 0n, unresolved: 0n, status: JobStatus.Settled })
      this.#addReserve(s, job.asset, toReserve)
      if (toBorrower > 0n) this.#pay(s, job.asset, job.borrower, toBorrower, emit)
      emit('JobSettled', { jobKey: key(jobKey), borrower: job.borrower, toLenders, toReserve, toBorrower })
    })
  }

  failJob(ctx: ModelContext, jobKey: Hex): ModelOutcome {
    return this.#run((s, emit) => {
      this.#onlyOperator(ctx)
      const job = this.#openJob(s, jobKey)
      const refund = job.escrow
      job.escrow = 0n
      job.status = JobStatus.Failed
      emit('JobFailed', { jobKey: key(jobKey), client: job.client, escrowRefunded: refund })
      if (refund > 0n) this.#pay(s, job.asset, job.client, refund, emit)
      if (job.unresolved === 0n) this.#close(s, jobKey, job, emit)
    })
  }

  reclaimJob(ctx: ModelContext, jobKey: Hex): ModelOutcome {
    return this.#run((s, emit) => {
      const job = this.#openJob(s, jobKey)
      if (key(ctx.sender) !== key(job.client) && key(ctx.sender) !== key(job.borrower)) revert('NotClient', getAddress(ctx.sender))
      if (job.outstanding > 0n) revert('AdvancesOwed', key(jobKey), job.outstanding)
      const reclaimableAt = job.fundedAt + this.reclaimDelay
      if (ctx.nowSeconds < reclaimableAt) revert('ReclaimTooEarly', reclaimableAt, ctx.nowSeconds)
      const refund = job.escrow
      const released = job.collateral
      Object.assign(job, { escrow: 0n, collateral: 0n, status: JobStatus.Reclaimed })
      emit('JobReclaimed', { jobKey: key(jobKey), client: job.client, escrowRefunded: refund, collateralReleased: released })
      this.#pay(s, job.asset, job.client, refund, emit)
      if (released > 0n) this.#pay(s, job.asset, job.borrower, released, emit)
    })
  }

  liquidate(ctx: ModelContext, offerKey: Hex, backingCovered: bigint): ModelOutcome {
    return this.#run((s, emit) => {
      this.#onlyOperator(ctx)
      const adv = this.#owingAdvance(s, offerKey)
      if (adv.liquidated) revert('AlreadyLiquidated', key(offerKey))
      const jobKey = adv.jobKey
      const jobFailed = jobKey !== zeroHash && this.#job(s, jobKey).status === JobStatus.Failed
      if (!jobFailed && ctx.nowSeconds <= adv.dueAt) revert('NotDefaulted', key(offerKey), adv.dueAt, ctx.nowSeconds)
      let lenderOwed = adv.lenderOwed
      let reserveOwed = adv.reserveOwed
      const owedBefore = lenderOwed + reserveOwed
      let collateralToLender = 0n
      let collateralToReserve = 0n
      if (jobKey !== zeroHash) {
        const job = this.#job(s, jobKey)
        const fromCollateral = min(job.collateral, owedBefore)
        collateralToLender = min(fromCollateral, lenderOwed)
        collateralToReserve = fromCollateral - collateralToLender
        job.collateral -= fromCollateral
        lenderOwed -= collateralToLender
        reserveOwed -= collateralToReserve
      }
      const fromBacking = min(backingCovered, lenderOwed)
      lenderOwed -= fromBacking
      const fromReserve = min(this.reserveOfIn(s, adv.asset), lenderOwed)
      lenderOwed -= fromReserve
      reserveOwed += fromReserve
      this.#addReserve(s, adv.asset, -fromReserve)
      const shortfall = owedBefore - collateralToLender - collateralToReserve - fromBacking - fromReserve
      adv.lenderOwed = lenderOwed
      adv.reserveOwed = reserveOwed
      adv.liquidated = true
      this.#addReserve(s, adv.asset, collateralToReserve)
      if (jobKey !== zeroHash) {
        const job = this.#job(s, jobKey)
        if (lenderOwed === 0n && reserveOwed === 0n) job.outstanding -= 1n
        job.unresolved -= 1n
      }
      emit('Liquidated', {
        offerKey: key(offerKey), jobKey, lender: adv.lender, fromCollateral: collateralToLender + collateralToReserve,
        fromBacking, fromReserve, shortfall,
      })
      if (collateralToLender + fromReserve > 0n) this.#pay(s, adv.asset, adv.lender, collateralToLender + fromReserve, emit)
      if (jobKey !== zeroHash) this.#closeIfResolved(s, jobKey, emit)
    })
  }

  claimHeld(ctx: ModelContext, asset: Address, account: Address): ModelOutcome {
    return this.#run((s, emit) => {
      const k = tokenKey(asset, account)
      const amount = s.heldFor.get(k) ?? 0n
      if (amount === 0n) revert('NothingHeld', getAddress(asset), getAddress(account))
      s.heldFor.set(k, 0n)
      s.heldOf.set(getAddress(asset), (s.heldOf.get(getAddress(asset)) ?? 0n) - amount)
      emit('HeldPaymentClaimed', { asset: getAddress(asset), to: getAddress(account), caller: getAddress(ctx.sender), amount })
      this.#transfer(s, asset, this.address, account, amount)
    })
  }

  // ------------------------------------------------------------------ internals

  /** Runs a call on a copy of the state; commits the copy only when the call did not revert. */
  #run(body: (s: FacilityModelState, emit: (name: string, args: Record<string, unknown>) => void) => void): ModelOutcome {
    const draft = cloneState(this.#state)
    const events: ModelEvent[] = []
    try {
      body(draft, (name, args) => events.push({ name, args }))
    } catch (error) {
      if (error instanceof Revert) return { ok: false, error: error.errorName, args: error.errorArgs }
      throw error
    }
    this.#state = draft
    return { ok: true, events }
  }

  reserveOfIn(s: FacilityModelState, asset: Address): bigint {
    return s.reserveOf.get(getAddress(asset)) ?? 0n
  }

  #addReserve(s: FacilityModelState, asset: Address, delta: bigint): void {
    s.reserveOf.set(getAddress(asset), this.reserveOfIn(s, asset) + delta)
  }

  #job(s: FacilityModelState, jobKey: Hex): ModelJob {
    let job = s.jobs.get(key(jobKey))
    if (job === undefined) {
      job = emptyJob()
      s.jobs.set(key(jobKey), job)
    }
    return job
  }

  #advance(s: FacilityModelState, offerKey: Hex): ModelAdvance {
    return s.advances.get(key(offerKey)) ?? emptyAdvance()
  }

  #openJob(s: FacilityModelState, jobKey: Hex): ModelJob {
    const job = s.jobs.get(key(jobKey))
    if (job === undefined || job.status === JobStatus.None) revert('UnknownJob', key(jobKey))
    if (job.status !== JobStatus.Open) revert('JobNotOpen', key(jobKey), job.status)
    return job
  }

  #owingAdvance(s: FacilityModelState, offerKey: Hex): ModelAdvance {
    const adv = s.advances.get(key(offerKey))
    if (adv === undefined || !adv.exists) revert('UnknownAdvance', key(offerKey))
    if (adv.lenderOwed === 0n && adv.reserveOwed === 0n) revert('NothingOwed', key(offerKey))
    return adv
  }

  #onlyOperator(ctx: ModelContext): void {
    if (key(ctx.sender) !== key(this.operator)) revert('NotOperator', getAddress(ctx.sender))
  }

  #resolveRepaid(s: FacilityModelState, adv: ModelAdvance, emit: (name: string, args: Record<string, unknown>) => void): void {
    if (adv.jobKey === zeroHash) return
    const job = this.#job(s, adv.jobKey)
    job.outstanding -= 1n
    if (!adv.liquidated) {
      job.unresolved -= 1n
      this.#closeIfResolved(s, adv.jobKey, emit)
    }
  }

  #closeIfResolved(s: FacilityModelState, jobKey: Hex, emit: (name: string, args: Record<string, unknown>) => void): void {
    const job = this.#job(s, jobKey)
    if (job.status === JobStatus.Failed && job.unresolved === 0n) this.#close(s, jobKey, job, emit)
  }

  #close(s: FacilityModelState, jobKey: Hex, job: ModelJob, emit: (name: string, args: Record<string, unknown>) => void): void {
    const released = job.collateral
    job.collateral = 0n
    job.status = JobStatus.Closed
    emit('JobClosed', { jobKey: key(jobKey), borrower: job.borrower, collateralReleased: released })
    if (released > 0n) this.#pay(s, job.asset, job.borrower, released, emit)
  }

  /** CreditFacilityV2._pay: a transfer the token refuses is held for its recipient (PaymentHeld). */
  #pay(s: FacilityModelState, asset: Address, to: Address, amount: bigint, emit: (name: string, args: Record<string, unknown>) => void): void {
    if (!this.#tryTransfer(s, asset, this.address, to, amount)) this.#hold(s, asset, to, amount, emit)
  }

  #hold(s: FacilityModelState, asset: Address, to: Address, amount: bigint, emit: (name: string, args: Record<string, unknown>) => void): void {
    const k = tokenKey(asset, to)
    s.heldFor.set(k, (s.heldFor.get(k) ?? 0n) + amount)
    s.heldOf.set(getAddress(asset), (s.heldOf.get(getAddress(asset)) ?? 0n) + amount)
    emit('PaymentHeld', { asset: getAddress(asset), to: getAddress(to), amount })
  }

  /** SafeERC20.trySafeTransfer(From): false, and nothing changed, where the token reverts. */
  #tryTransfer(s: FacilityModelState, asset: Address, from: Address, to: Address, amount: bigint): boolean {
    return this.#tries(s, () => this.#transfer(s, asset, from, to, amount))
  }

  #tryTransferFrom(s: FacilityModelState, asset: Address, from: Address, to: Address, amount: bigint): boolean {
    return this.#tries(s, () => this.#transferFrom(s, asset, from, to, amount))
  }

  /** Runs a token call: whether it succeeded; one that reverts leaves the token as it was (an allowance it spent too). */
  #tries(s: FacilityModelState, call: () => void): boolean {
    const allowances = new Map(s.tokens.allowances)
    try {
      call()
      return true
    } catch (error) {
      if (!(error instanceof Revert)) throw error
      s.tokens.allowances = allowances
      return false
    }
  }

  /** OpenZeppelin ERC20.transferFrom with this contract as the spender: allowance first, then balance. */
  #transferFrom(s: FacilityModelState, asset: Address, from: Address, to: Address, amount: bigint): void {
    const aKey = allowanceKey(asset, from, this.address)
    const allowed = s.tokens.allowances.get(aKey) ?? 0n
    if (allowed < uint256Max) {
      if (allowed < amount) revert('ERC20InsufficientAllowance', this.address, allowed, amount)
      s.tokens.allowances.set(aKey, allowed - amount)
    }
    this.#transfer(s, asset, from, to, amount)
  }

  /** OpenZeppelin ERC20._transfer/_update, with TestStablecoin's blacklist (the facility is always the token's caller). */
  #transfer(s: FacilityModelState, asset: Address, from: Address, to: Address, amount: bigint): void {
    if (to === zeroAddress) revert('ERC20InvalidReceiver', zeroAddress)
    if (this.#refused.has(key(from)) || this.#refused.has(key(to))) revert('Error', 'Blacklistable: account is blacklisted')
    const fromKey = tokenKey(asset, from)
    const balance = s.tokens.balances.get(fromKey) ?? 0n
    if (balance < amount) revert('ERC20InsufficientBalance', getAddress(from), balance, amount)
    s.tokens.balances.set(fromKey, balance - amount)
    const toKey = tokenKey(asset, to)
    s.tokens.balances.set(toKey, (s.tokens.balances.get(toKey) ?? 0n) + amount)
  }
}
