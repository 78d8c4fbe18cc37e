// Reconciliation of the service's ledger with the chain (issue 9; design-engine-9-10.md "Reconciliation"): per network
// and asset, what the store and the engine say every job, advance and reserve holds on the credit contract, and what
// every flow of tokens added up to, against what the contract holds and emitted (src/chain/reconcile.ts reads and
// compares). It runs at start-up (app.ts: after the store opened, in the background, so that an unreachable chain
// never blocks a start) and on demand (POST /operator/reconcile). The last run of each network stays readable: a
// difference makes /health degraded and lists it there.
//
// What the ledger is: every job and advance in the store (final ones included), each read live from the engine when it
// is still in memory (the engine is at most one commit ahead of the disk), and the engine's reserve records. Each is
// mapped to what the contract must hold for it by the contract's rules (CreditFacilityV2, design-chain.md):
//   job funded/active -> Open, escrow = receivable, collateral = posted - used by liquidations;
//   job completed -> Settled (holds nothing); job defaulted (failed, advances open) -> Failed, escrow 0 (refunded),
//   collateral = posted - used; job failed (final: nothing open) -> Closed (holds nothing); job failed or defaulted
//   with reason escrow_reclaimed (its client's reclaimJob; it never had an advance) -> Reclaimed (holds nothing: the
//   escrow went to the client, the collateral to the borrower);
//   advance active/defaulted -> lender owed P + F - R, reserve owed R; repaid -> nothing owed; liquidated -> nothing
//   owed; shortfall -> what the recovery left (collateral pays the lender's part first, then the reserve's; backing
//   and the reserve pay the lender; the reserve is subrogated for what it paid).
// The flows are the sums of the same records (principal paid, escrow funded and refunded, repayments and settlements
// by lender and reserve part, liquidation steps), over the contract's whole history: from the network's `deploymentBlock` (networks file; the devnet writes
// its own, 0 when not configured) to the network's confirmed head. So the service must be the contract's only ledger: a contract shared with another data directory shows that
// directory's jobs and advances as unexpected.
//
// Jobs funded on chain that nobody registered with the service are not differences: anyone may call fundJob, and the
// service promised nothing about them (counting them would let a stranger make /health degraded for the price of a
// transaction). They are counted apart (unregisteredJobs) and still take part in the token-conservation check.
//
// Nor is a surplus of tokens: the contract holding more of an asset than its jobs' escrow and collateral and its
// reserve. Anyone can transfer a token to the contract outside its functions, and nothing can take it out again, so
// counting it would let a stranger make /health degraded for good for the price of one unit (an adversary's finding,
// test/api/adversary6-token-surplus.test.ts). It is owed to nobody and short of nothing; it is listed apart
// (unaccountedTokens). A shortfall, the contract holding less than it owes, stays a difference. Only the network's
// configured tokens are read and summed: a job funded in another "token" (fundJob takes any address) is known, as it
// is on chain, and nothing of that contract is called (its balanceOf could revert, failing every run, or answer
// anything).
//
// A transaction mined but not yet recorded (a report, an operator transaction between its receipt and its commit)
// shows as a difference until it is recorded: run again. The chain follower (issue 9) closes that window for good.
import { getAddress, type Address, type Hex } from 'viem'
import type { AdvanceView, JobView } from '../engine/types.ts'
import { advanceViewFromSnapshot, jobViewFromSnapshot } from '../engine/engine.ts'
import { ESCROW_RECLAIMED } from '../engine/jobs.ts'
import { findToken, type NetworkConfig } from '../chain/config.ts'
import type { NetworkClients } from '../chain/clients.ts'
import {
  compareStates, heldDifferences, jobStatusNames, readChainState, readHeldFor, zeroTotals, type ChainState, type Difference, type ExpectedAssetState, type ExpectedJob, type ExpectedNetworkState,
  type FlowTotalName, type FlowTotals,
} from '../chain/reconcile.ts'
import { JobStatus } from '../chain/facility-model.ts'
import type { CreditService } from './credit-service.ts'

/** Tokens of one asset that the credit contract holds beyond the escrow and collateral of its jobs and its reserve. */
export type UnaccountedTokens = { asset: Address; amountAtomic: bigint }

export type ReconciliationStatus = 'pending' | 'ok' | 'differences' | 'unavailable'

/** The last reconciliation of one network, as /health and POST /operator/reconcile show it. */
export type NetworkReconciliation = {
  network: string
  /** pending: not run yet; ok: no difference; differences: some; unavailable: the chain could not be read. */
  status: ReconciliationStatus
  checkedAtMs: number | null
  fromBlock: bigint | null
  toBlock: bigint | null
  differences: Difference[]
  /** Open jobs on chain that nobody registered with the service (not differences; see above). */
  unregisteredJobs: number
  /** Per asset, what the contract holds beyond its jobs and reserve (not differences; see above). */
  unaccountedTokens: UnaccountedTokens[]
  /** Per asset with any, what the contract holds for recipients its token refused (heldOf; theirs to claim). */
  heldPayments: UnaccountedTokens[]
  /** Why the chain could not be read (status unavailable). */
  error: string | null
}

const lower = (hex: string): Hex => hex.toLowerCase() as Hex

/** What the ledger says the contract holds and emitted on `network`, as of its block `toBlock`. */
export function ledgerExpectedState(service: CreditService, network: NetworkConfig, fromBlock: bigint, toBlock: bigint): ExpectedNetworkState {
  type AssetLedger = { jobs: Map<Hex, ExpectedJob>; advances: ExpectedAssetState['advances'] & Map<Hex, { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint; liquidated: boolean }>; totals: FlowTotals }
  const bySymbol = new Map<string, AssetLedger>()
  const assetOf = (symbol: string): AssetLedger => {
    let ledger = bySymbol.get(symbol)
    if (ledger === undefined) bySymbol.set(symbol, (ledger = { jobs: new Map(), advances: new Map(), totals: zeroTotals() }))
    return ledger
  }
  for (const token of network.tokens) assetOf(token.symbol)
  const { engine } = service

  const jobs = new Map<string, JobView>()
  for (const job of ledgerActors(service, 'job', (id) => engine.getJob(id), jobViewFromSnapshot)) {
    if (job.network === network.slug) jobs.set(job.jobId, job)
  }
  // The job's escrow and collateral a completed job's settlement paid to lenders and the reserve, by job.
  const settledOf = new Map<string, bigint>()
  for (const advance of ledgerActors(service, 'advance', (id) => engine.getAdvance(id), advanceViewFromSnapshot)) {
    if (advance.network !== network.slug) continue
    const ledger = assetOf(advance.asset)
    ledger.advances.set(lower(advance.advanceKey), { ...owedOnChain(advance), liquidated: advance.recovery !== null })
    const totals = ledger.totals
    totals.suppliersPaidAtomic += advance.principalAtomic
    const { repayments, earlierRepayments, recovery } = advance
    // The payments the advance no longer lists are all repayments (a settlement pays in full: it is the last one).
    totals.repaidToLendersAtomic += earlierRepayments?.lenderAmountAtomic ?? 0n
    totals.repaidToReserveAtomic += earlierRepayments?.reserveAmountAtomic ?? 0n
    for (const repayment of repayments) {
      if (repayment.kind === 'job_settlement') {
        totals.settledToLendersAtomic += repayment.lenderAmountAtomic
        totals.settledToReserveAtomic += repayment.reserveAmountAtomic
        if (advance.source.kind === 'job') {
          settledOf.set(advance.source.id, (settledOf.get(advance.source.id) ?? 0n) + repayment.lenderAmountAtomic + repayment.reserveAmountAtomic)
        }
      } else {
        totals.repaidToLendersAtomic += repayment.lenderAmountAtomic
        totals.repaidToReserveAtomic += repayment.reserveAmountAtomic
      }
    }
    if (recovery !== null) {
      totals.liquidatedFromCollateralAtomic += recovery.fromCollateralAtomic
      totals.liquidatedFromBackingAtomic += recovery.fromBackingAtomic
      totals.liquidatedFromReserveAtomic += recovery.fromReserveAtomic
      totals.liquidationShortfallAtomic += recovery.shortfallAtomic
    }
  }

  for (const job of jobs.values()) {
    const ledger = assetOf(job.asset)
    const { totals } = ledger
    const escrow = job.receivableAtomic - job.revenueUsedAtomic
    const collateral = job.collateralAtomic - job.collateralUsedAtomic
    totals.escrowFundedAtomic += job.receivableAtomic
    totals.collateralPostedAtomic += job.collateralAtomic
    let expected: ExpectedJob
    if (job.failureReason === ESCROW_RECLAIMED) {
      // Whether its last leased offer's lease has ended yet (failed) or not (defaulted), the contract ended it at once.
      expected = { status: 'reclaimed', escrowAtomic: 0n, collateralAtomic: 0n }
      totals.escrowRefundedAtomic += escrow
      totals.collateralReleasedAtomic += collateral
      ledger.jobs.set(lower(job.jobKey), expected)
      continue
    }
    switch (job.state) {
      case 'funded':
      case 'active':
        expected = { status: 'open', escrowAtomic: escrow, collateralAtomic: collateral }
        break
      case 'completed':
        expected = { status: 'settled', escrowAtomic: 0n, collateralAtomic: 0n }
        totals.settledToBorrowersAtomic += escrow + collateral - (settledOf.get(job.jobId) ?? 0n)
        break
      case 'defaulted':
        expected = { status: 'failed', escrowAtomic: 0n, collateralAtomic: collateral }
        totals.escrowRefundedAtomic += escrow
        break
      case 'failed':
        expected = { status: 'closed', escrowAtomic: 0n, collateralAtomic: 0n }
        totals.escrowRefundedAtomic += escrow
        totals.collateralReleasedAtomic += collateral
        break
    }
    ledger.jobs.set(lower(job.jobKey), expected)
  }

  const reserves = engine.creditState().reserves.filter((r) => r.network === network.slug)
  return {
    network: network.slug,
    contract: network.creditContract,
    fromBlock,
    toBlock,
    assets: [...bySymbol].map(([symbol, ledger]) => ({
      asset: getAddress(findToken(network, symbol).address),
      jobs: ledger.jobs,
      advances: ledger.advances,
      reserveAtomic: reserves.find((r) => r.asset === symbol)?.balanceAtomic ?? 0n,
      totals: ledger.totals,
    })),
  }
}

/**
 * Every job or advance of the ledger once, as it is now. An actor that has just ended left the engine at once, but its
 * final snapshot reaches the store with its group commit: until then the store holds its earlier snapshot, or none
 * when the actor was also created in a commit still in flight, so an ended actor is read from its commit in flight
 * (service.inFlight), as GET routes read it (service.stored), and the live and ended actors the store does not hold
 * yet are read too (test/api/reconcile-in-flight.test.ts). Synchronous: no commit lands while it reads.
 */
function* ledgerActors<V>(service: CreditService, kind: 'job' | 'advance', live: (id: string) => V | undefined, fromSnapshot: (snapshot: unknown) => V): Generator<V> {
  const notStored = new Set([...service.engine.liveIds(kind), ...service.endedInFlightIds(kind)])
  for (const { id, entry } of service.store.iterateKind(kind)) {
    notStored.delete(id)
    yield live(id) ?? service.inFlight(kind, id, fromSnapshot) ?? fromSnapshot(entry.snapshot)
  }
  for (const id of notStored) {
    const actor = live(id) ?? service.inFlight(kind, id, fromSnapshot)
    if (actor !== undefined) yield actor
  }
}

/**
 * What the ledger says the advance still owes on chain: the advance records it after every payment, settlement and
 * liquidation (the contract's rules: lender's part first, then the reserve's share; after a shortfall the reserve's
 * claim includes what it paid).
 */
function owedOnChain(a: AdvanceView): { lenderOwedAtomic: bigint; reserveOwedAtomic: bigint } {
  return { lenderOwedAtomic: a.lenderOwedAtomic, reserveOwedAtomic: a.reserveOwedAtomic }
}

/** Runs reconciliations and keeps the last one of each network. */
export class Reconciliation {
  readonly #service: CreditService
  readonly #clients: (slug: string) => NetworkClients
  readonly #fromBlockOf: (network: NetworkConfig) => bigint
  readonly #last = new Map<string, NetworkReconciliation>()
  /** One run per network at a time: a second caller waits for the run under way and gets its result. */
  readonly #running = new Map<string, Promise<NetworkReconciliation>>()

  constructor(service: CreditService, options: { clients: (slug: string) => NetworkClients; fromBlockOf?: (network: NetworkConfig) => bigint }) {
    this.#service = service
    this.#clients = options.clients
    // Nothing of the contract is older than its deployment block (the networks file's deploymentBlock).
    this.#fromBlockOf = options.fromBlockOf ?? ((network) => network.deploymentBlock ?? 0n)
  }

  /** The last run of each network (pending before the first). */
  last(): NetworkReconciliation[] {
    return this.#service.networks.map((n) => this.#last.get(n.slug) ?? pending(n.slug))
  }

  /** Whether the last run of some network found a difference (health degraded). */
  hasDifferences(): boolean {
    return [...this.#last.values()].some((r) => r.status === 'differences')
  }

  /** Reconciles every network (or one), in parallel; never throws: an unreadable chain is status unavailable. */
  async run(slug?: string): Promise<NetworkReconciliation[]> {
    const networks = this.#service.networks.filter((n) => slug === undefined || n.slug === slug)
    return Promise.all(networks.map((n) => this.#runOne(n)))
  }

  #runOne(network: NetworkConfig): Promise<NetworkReconciliation> {
    const running = this.#running.get(network.slug)
    if (running !== undefined) return running
    const run = this.#reconcile(network).finally(() => this.#running.delete(network.slug))
    this.#running.set(network.slug, run)
    return run
  }

  async #reconcile(network: NetworkConfig): Promise<NetworkReconciliation> {
    const checkedAtMs = this.#service.now()
    const fromBlock = this.#fromBlockOf(network)
    let result: NetworkReconciliation
    try {
      const { publicClient } = this.#clients(network.slug)
      // A block with N confirmations is at most head - N + 1: what the service's proofs accept.
      const head = await publicClient.getBlockNumber({ cacheTime: 0 })
      const toBlock = head - BigInt(network.confirmations - 1)
      // The ledger is read after the head: what it recorded was proven at or before that block, so a recorded fact is
      // never ahead of the state read.
      const ledger = ledgerExpectedState(this.#service, network, fromBlock, toBlock < fromBlock ? fromBlock : toBlock)
      const actual = await readChainState({
        network: network.slug,
        publicClient,
        contract: ledger.contract,
        fromBlock: ledger.fromBlock,
        toBlock: ledger.toBlock,
        jobKeys: ledger.assets.flatMap((a) => [...a.jobs.keys()]),
        offerKeys: ledger.assets.flatMap((a) => [...a.advances.keys()]),
        assets: ledger.assets.map((a) => a.asset),
        tokens: network.tokens.map((token) => token.address),
      })
      const { expected, unregisteredJobs } = withUnregisteredJobs(ledger, actual)
      const held = await this.#heldDifferences(network, publicClient, actual)
      const { differences, unaccountedTokens } = splitSurplus([...compareStates(expected, actual), ...held])
      result = {
        network: network.slug,
        status: differences.length === 0 ? 'ok' : 'differences',
        checkedAtMs,
        fromBlock: actual.fromBlock,
        toBlock: actual.toBlock,
        differences,
        unregisteredJobs,
        unaccountedTokens,
        heldPayments: [...actual.assets.values()].filter((a) => a.heldAtomic > 0n).map((a) => ({ asset: a.asset, amountAtomic: a.heldAtomic })),
        error: null,
      }
    } catch (error) {
      result = { ...pending(network.slug), status: 'unavailable', checkedAtMs, error: ((error as Error).message ?? String(error)).split('\n')[0] ?? 'unknown' }
    }
    this.#last.set(network.slug, result)
    return result
  }

  /**
   * The party's views of held payments against the contract (held_payment differences): for every recipient that a
   * PaymentHeld of the range names, or that the engine holds a record of, on one of the network's tokens, what the
   * views show (the engine's record, 0 without one) and heldFor, both as of the block the chain follower applied last
   * (taken with the records, in one synchronous read; the views are built from the follower's events alone). None
   * before the follower applied anything.
   */
  async #heldDifferences(network: NetworkConfig, publicClient: NetworkClients['publicClient'], actual: ChainState): Promise<Difference[]> {
    const service = this.#service
    const blockNumber = service.appliedChainBlocks.get(network.slug) ?? service.followers.get(network.slug)?.cursor?.blockNumber
    if (blockNumber === undefined) return []
    const tokens = new Set(network.tokens.map((token) => getAddress(token.address)))
    const pairs = new Map<string, { asset: Address; account: Address }>()
    const add = (asset: Address, account: Address) => {
      if (tokens.has(asset)) pairs.set(`${asset}:${account}`, { asset, account })
    }
    for (const [asset, recipients] of actual.heldRecipients) for (const account of recipients) add(asset, account)
    for (const { id } of service.store.iterateKind('held')) {
      // heldPaymentId: `${network}:${token}:${account}`.
      const parts = id.split(':')
      const [token, account] = parts.splice(-2)
      if (parts.join(':') === network.slug && token !== undefined && account !== undefined) add(getAddress(token), getAddress(account))
    }
    const held = [...pairs.values()].map((pair) => ({
      ...pair,
      expected: service.engine.heldPayments([pair.account]).find((r) => r.network === network.slug && r.token === pair.asset)?.amountAtomic ?? 0n,
    }))
    const onChain = await readHeldFor({ publicClient, contract: network.creditContract, held, blockNumber })
    return heldDifferences(network.slug, held.map((h, i) => ({ ...h, actual: onChain[i] as bigint })))
  }
}

/**
 * The ledger plus the open jobs the chain holds that nobody registered with the service (see the file's comment): as
 * the chain holds them, their escrow and collateral in the funding totals (no advance can draw on an unregistered
 * job: the service authorizes none), so that they are no difference and still count in token conservation. An
 * unregistered job its client reclaimed (the case reclaimJob exists for) is no difference either: it held exactly what
 * its JobReclaimed gave back (nothing else can take from a job without advances), funded and refunded, posted and
 * released.
 */
export function withUnregisteredJobs(ledger: ExpectedNetworkState, actual: ChainState): { expected: ExpectedNetworkState; unregisteredJobs: number } {
  const known = new Set(ledger.assets.flatMap((a) => [...a.jobs.keys()].map(lower)))
  const assets = new Map(ledger.assets.map((a) => [getAddress(a.asset), { ...a, jobs: new Map(a.jobs), totals: { ...a.totals } }]))
  let unregisteredJobs = 0
  for (const [key, job] of actual.jobs) {
    const reclaim = job.status === JobStatus.Reclaimed ? actual.reclaims.get(lower(key)) : undefined
    if (known.has(lower(key)) || (job.status !== JobStatus.Open && reclaim === undefined)) continue
    if (job.status === JobStatus.Open) unregisteredJobs += 1
    const address = getAddress(job.asset)
    let asset = assets.get(address)
    if (asset === undefined) assets.set(address, (asset = { asset: address, jobs: new Map(), advances: new Map(), reserveAtomic: 0n, totals: {} }))
    asset.jobs.set(lower(key), { status: jobStatusNames[job.status] as ExpectedJob['status'], escrowAtomic: job.escrow, collateralAtomic: job.collateral })
    // A job in a token the service does not serve: its flows and balance were not read (readChainState's tokens).
    const add = (name: FlowTotalName, amount: bigint) => {
      if (actual.assets.has(address)) asset.totals[name] = (asset.totals[name] ?? 0n) + amount
    }
    add('escrowFundedAtomic', job.escrow + (reclaim?.escrowRefunded ?? 0n))
    add('collateralPostedAtomic', job.collateral + (reclaim?.collateralReleased ?? 0n))
    if (reclaim !== undefined) {
      add('escrowRefundedAtomic', reclaim.escrowRefunded)
      add('collateralReleasedAtomic', reclaim.collateralReleased)
    }
  }
  return { expected: { ...ledger, assets: [...assets.values()] }, unregisteredJobs }
}

/** Takes the token-conservation differences where the contract holds more than it accounts for out of the differences. */
export function splitSurplus(all: Difference[]): { differences: Difference[]; unaccountedTokens: UnaccountedTokens[] } {
  const differences: Difference[] = []
  const unaccountedTokens: UnaccountedTokens[] = []
  for (const d of all) {
    const surplus = d.kind === 'token_conservation' ? BigInt(d.actual as string) - BigInt(d.expected as string) : 0n
    if (surplus > 0n) unaccountedTokens.push({ asset: d.asset, amountAtomic: surplus })
    else differences.push(d)
  }
  return { differences, unaccountedTokens }
}

function pending(network: string): NetworkReconciliation {
  return { network, status: 'pending', checkedAtMs: null, fromBlock: null, toBlock: null, differences: [], unregisteredJobs: 0, unaccountedTokens: [], heldPayments: [], error: null }
}

