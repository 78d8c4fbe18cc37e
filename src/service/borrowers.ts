// What a borrower brings, each verified before its one engine command: a backing source (the attester's EIP-712
// signature), a job (its JobFunded proof on chain and, when a client registers it, the borrower's consent), collateral
// (its CollateralPosted proof), and a credit request. Called through CreditService (credit-service.ts) by
// src/api/routes/credit.ts.
import { getAbiItem, getAddress, type Address, type Hex } from 'viem'
import { creditFacilityV2Abi } from '../chain/artifacts.ts'
import type { CollateralPosition, CreditRequestInput, EngineError, JobView, RegisterSourceInput, SourceRecord, UnderwritingDecision } from '../engine/types.ts'
import { fail } from '../engine/errors.ts'
import { AttestationExpiredError, AttestationInvalidError, verifyBackingAttestation } from '../chain/attestation.ts'
import { BorrowerConsentError, consentDomainOf, verifyBorrowerConsent } from '../chain/consent.ts'
import { jobKey, legacyJobKey } from '../chain/ids.ts'
import type { NetworkConfig } from '../chain/config.ts'
import type { FacilityFact } from '../chain/events-v2.ts'
import { collateralPostedUpTo, TooManyPostingsError } from '../chain/posted-collateral.ts'
import { JobRegistrationRefusedError, readReclaimWindow, reclaimableWhileCreditLive } from '../chain/reclaim-window.ts'
import { ChainRpcError, ProofRefusedError } from '../chain/proofs.ts'
import { ChainBehindError } from '../chain/operator.ts'
import { matchFacilityFacts, type FacilityFactOf } from '../chain/proofs-v2.ts'
import type { StoredResponse } from '../store/index.ts'
import { valueOf, type ServiceCore } from './core.ts'
import { collateralProofUse } from './chain-observation.ts'
import type { Mutation } from './mutation.ts'
import { blockTimeMsOf, fundedBefore, readChainClock, type ChainClockReading, type FundingOnChain } from './funding-order.ts'

export async function registerSource(service: ServiceCore, mutation: Mutation<SourceRecord>, caller: Address, body: RegisterSourceInput): Promise<StoredResponse> {
  if (body.validUntilMs <= service.now()) throw new AttestationExpiredError('the attestation\'s validUntil has passed; ask the attester for a fresh one')
  const attester = await verifyBackingAttestation(service.config.attesters, service.domain, body, body.evidenceId)
  if (attester === undefined) {
    throw new AttestationInvalidError(`evidenceId is not an EIP-712 BackingSource signature by a configured attester over these fields for service "${service.domain}" (domain version 3; see the catalog's attestation)`)
  }
  return service.apply(mutation, () => service.engine.registerSource({ ...body, caller }, service.now()))
}

export async function createJob(
  service: ServiceCore,
  mutation: Mutation<JobView>,
  caller: Address,
  /** The request's clientKeyOf: its chain reads take from that client's part of the budget (chain-read-budget.ts). */
  clientKey: string,
  body: { jobId: string; network: string; asset: string; agent: Address; receivableAtomic: bigint; dueAtMs: number; fundingTxHash: string; borrowerConsent?: string | undefined },
): Promise<StoredResponse> {
  const network = service.network(body.network)
  const token = service.token(network, body.asset)
  // Read in the same synchronous section as prove's own choice: whether its proof is free (the follower read it).
  const provedFree = service.observedFacts.of(network.slug, body.fundingTxHash) !== undefined
  const fact = fundingUnderKey(
    body.jobId, network,
    await service.proveIn(network.slug, caller, clientKey, 'JobFunded', body.fundingTxHash, { borrower: body.agent, asset: token.address, amount: body.receivableAtomic }),
  )
  const key = fact.args.jobKey.toLowerCase() as Hex
  const client = getAddress(fact.args.client)
  // Whether its funding registered a job already, who may register it: before any further chain read (an adversary's
  // finding: a stranger, or a second registration, made the service read the job's whole history of postings each time).
  const proof = service.useProof(fact, `job:${body.jobId}`)
  valueOf(service.engine.planJobCreation({ jobId: body.jobId, client, borrower: body.agent, receivableAtomic: body.receivableAtomic, dueAtMs: body.dueAtMs, caller }, service.now()))
  const ended = endedJobRefusal(service, body.jobId)
  if (ended !== undefined) valueOf(ended)
  // The reads below (the consent's wallet, the reclaim window, earlier postings) come again with every attempt that
  // fails after them (a bad consent, a due time past the reclaim window), the proof unused: one read of the caller's
  // own share each, which the funding proof's read pays for when it is not free (src/service/observed-facts.ts).
  // Charged again then, an honest registration took two reads of the caller's share (a review's finding: with a share
  // of two, the borrower's first report after it was refused, test/api/chain-read-budget.test.ts).
  if (provedFree) service.chainReads.takeOwn(network.slug, caller)
  // Only the borrower's own request, or its signed consent, names it as a job's borrower: otherwise a stranger could
  // fund a tiny job naming any wallet and fail it to suspend that wallet (issue 10, hole 3). Who may create a job
  // at all (its client or its borrower) is the engine's rule.
  if (caller !== body.agent && caller === client) {
    if (body.borrowerConsent === undefined) {
      throw new BorrowerConsentError('borrower_consent_required', 'a client registers a job only with the borrower\'s consent (borrowerConsent, EIP-712; see the catalog), or the borrower registers it')
    }
    const terms = { jobId: body.jobId, network: network.slug, asset: token.symbol, receivableAtomic: body.receivableAtomic, client, dueAtMs: body.dueAtMs }
    const domain = consentDomainOf(network)
    if (!(await verifyBorrowerConsent(service.clientsOf(network.slug).publicClient, network.slug, domain, body.agent, terms, body.borrowerConsent))) {
      // What to sign, in full: the catalog's consent.domain is the fixed part only, and a signature over it alone (an
      // outsider's first try) was refused with nothing saying the domain needs the network's chainId and contract.
      throw new BorrowerConsentError('borrower_consent_invalid', `borrowerConsent is not the borrower's EIP-712 BorrowerConsent signature over these terms (jobId, network, asset, receivableAtomic, client: the JobFunded sender ${client}, dueAt in unix seconds) under the domain {name: "${domain.name}", version: "${domain.version}", chainId: ${domain.chainId}, verifyingContract: ${domain.verifyingContract}}: the catalog's consent.domain plus the job's network's chainId and creditContract`)
    }
  }
  const clock = await checkReclaimWindow(service, network.slug, body.jobId, key, body.dueAtMs)
  // Both at once (one more round trip would be on every registration); the same network's refusal first when both refuse.
  const earlierFundings = await Promise.allSettled([
    refuseOtherKeyEarlier(service, network, body.jobId, key, fact),
    refuseLaterFunding(service, caller, clientKey, body.jobId, { slug: network.slug, fundedAtMs: fact.blockTimeMs, clock, blockTimeMs: blockTimeMsOf(network) }),
  ])
  for (const settled of earlierFundings) if (settled.status === 'rejected') throw settled.reason
  const posted = await collateralPostedBefore(service, network.slug, body.jobId, key, fact.blockNumber)
  const postedProofs = posted.map((p) => service.useProof(p, collateralProofUse(body.jobId)))
  return service.apply(
    mutation,
    () =>
      endedJobRefusal(service, body.jobId) ?? service.engine.createJob(
        {
          jobId: body.jobId,
          client,
          borrower: body.agent,
          network: network.slug,
          asset: token.symbol,
          receivableAtomic: body.receivableAtomic,
          dueAtMs: body.dueAtMs,
          funding: { network: network.slug, txHash: fact.txHash, logIndex: fact.logIndex },
          jobKey: key,
          postedCollateral: posted.map((p) => ({
            borrower: getAddress(p.args.borrower), amountAtomic: p.args.amount, proof: { network: network.slug, txHash: p.txHash, logIndex: p.logIndex },
          })),
          caller,
        },
        service.now(),
      ),
    () => [proof, ...postedProofs],
  )
}

/**
 * A job id that ended (its final snapshot in the store, or in a commit not yet on disk) is not registered again: the
 * engine holds live jobs only, and a new job of the id would replace the ended one's record (its view, its history).
 * The chain kept that from happening only while one key per id existed (a second fundJob of the key reverted
 * JobAlreadyFunded); with two keys per network the id's other key is free (review40: a stranger funded an ended job's
 * legacy key and registered its id 201, GET /credit/jobs/{jobId} then showed the stranger's job), and a network whose
 * follower stopped is passed over by refuseLaterFunding. Checked before the chain reads and again in the command.
 */
function endedJobRefusal(service: ServiceCore, jobId: string): { ok: false; error: EngineError } | undefined {
  if (service.stored('job', jobId, (snapshot) => snapshot) === undefined) return undefined
  return fail('conflict', 'job_exists', `job ${jobId} exists (it ended): a job id is registered once; fund a job under an id of your own (job_ and a random UUID)`)
}

/**
 * The JobFunded of the registration's transaction (`proved`: its events, one JobFunded with the registration's
 * borrower, asset and amount at least) under the job's key on its network (ids.ts jobKey), or else under the legacy
 * key keccak256(utf8(jobId)) (a client that funded before per-network keys: its escrow is on chain, and the job keeps
 * that key); under neither, the proof is refused 422 proof_wrong_arguments.
 */
function fundingUnderKey(
  jobId: string,
  network: NetworkConfig,
  proved: { fact: FacilityFactOf<'JobFunded'>; facts: readonly FacilityFact[] },
): FacilityFactOf<'JobFunded'> {
  const { txHash, args } = proved.fact
  const wanted = { borrower: args.borrower, asset: args.asset, amount: args.amount }
  const keys = [jobKey(network, jobId), legacyJobKey(jobId)]
  for (const key of keys) {
    const matched = matchFacilityFacts(proved.facts, txHash, 'JobFunded', { ...wanted, jobKey: key })
    if (matched.ok) return matched.value[0] as FacilityFactOf<'JobFunded'>
  }
  throw new ProofRefusedError(
    'wrong_arguments',
    `no JobFunded of ${txHash} has job ${jobId}'s key on ${network.slug}, ${keys[0]} (keccak256(abi.encodePacked(uint256 chainId, address creditContract, bytes jobId)), the catalog's contracts.keys), nor its legacy key ${keys[1]}`,
  )
}

/**
 * The job must be open on chain (a settled, failed or reclaimed job's escrow is gone: 409 job_not_open_on_chain), and
 * its client must not be able to reclaim it (CreditFacilityV2.reclaimJob) while its credit can still be drawn: offers
 * on a job end by its due time and a lease signed before then ends a lease TTL later, on the chain's clock: so the
 * reclaim time must be at least a lease TTL after the due time plus how far the chain's clock is ahead of the
 * service's (now), and after the chain's own time, or 422 job_reclaimable_before_due. Then no lease on the job outlives its escrow. A reclaim mined while the registration
 * runs anyway (one slower than a lease TTL, a chain clock that jumps) is caught by collateralPostedBefore, which reads
 * the job at the follower's last applied block, the block the registration's commit is taken at. Returns the chain's
 * latest block's timestamp it read and when (refuseLaterFunding's reading of the chain's clock).
 */
async function checkReclaimWindow(service: ServiceCore, slug: string, jobId: string, key: Hex, dueAtMs: number): Promise<ChainClockReading> {
  const { value: window, clock } = await readChainClock(() => readReclaimWindow(service.clientsOf(slug), service.network(slug).creditContract, key), (w) => w.chainTimeMs)
  if (window.status !== 'open') throw new JobRegistrationRefusedError('job_not_open_on_chain', `job ${jobId} is ${window.status} on chain: its escrow is no longer held`)
  const leaseTtlMs = service.config.leaseTtlSeconds * 1000
  // Offers and leases run on the chain's clock, due times on the service's: an offer that lasts until the due time by
  // the service's clock ends on chain as much later as the chain's clock is ahead, and a lease signed then ends a TTL
  // after that.
  const chainAheadMs = Math.max(0, window.chainTimeMs - service.now())
  const latestCreditEndMs = Math.max(dueAtMs + chainAheadMs, window.chainTimeMs) + leaseTtlMs
  if (reclaimableWhileCreditLive(window.reclaimableAtMs, latestCreditEndMs)) {
    throw new JobRegistrationRefusedError(
      'job_reclaimable_before_due',
      `job ${jobId}'s client may reclaim its escrow on chain from ${new Date(window.reclaimableAtMs).toISOString()}, before the job's credit ends ` +
        `(its due time plus how far the chain's clock is ahead of the service's, ${Math.round(chainAheadMs / 1000)} s, plus a lease of ${service.config.leaseTtlSeconds} s): register it with an earlier dueAt`,
    )
  }
  return clock
}

/**
 * On the registering network itself the id has two keys too (its key there and its legacy key, both taken at
 * registration), so the rule of the earliest funding reads the other one there as well: a funding of the id's other
 * key on this network mined before this one owns the id (409 job_id_funded_elsewhere). One chain, so the order is
 * exact: by the blocks' timestamps, and within one second by the other key's JobFunded in this funding's block (its
 * log index; none there: an earlier block of the same second). Without it, one who learned the id off chain funded its
 * other key after the real funding, registered first and took the id, the real job refused 409 job_exists (review40,
 * test/api/review40-same-network-other-key.test.ts). One read at the latest block (and a one-block log read for a tie),
 * with the registration's other reads (no charge of its own); an RPC failure is 503 chain_unavailable, retry.
 */
async function refuseOtherKeyEarlier(
  service: ServiceCore, network: NetworkConfig, jobId: string, key: Hex, funding: { blockTimeMs: number; blockNumber: bigint; logIndex: number },
): Promise<void> {
  const perNetwork = jobKey(network, jobId)
  const [otherKey, otherRule] = key === perNetwork.toLowerCase() ? [legacyJobKey(jobId), 'its legacy key'] : [perNetwork, `its key on ${network.slug}`]
  let earlier: boolean
  let otherFundedAtMs: number
  try {
    const { publicClient } = service.clientsOf(network.slug)
    const job = await publicClient.readContract({ address: network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [otherKey] })
    if (job.fundedAt === 0n) return
    otherFundedAtMs = Number(job.fundedAt) * 1000
    if (otherFundedAtMs !== funding.blockTimeMs) {
      earlier = otherFundedAtMs < funding.blockTimeMs
    } else {
      const block = funding.blockNumber
      const logs = await publicClient.getLogs({ address: network.creditContract, event: jobFundedEvent, args: { jobKey: otherKey }, fromBlock: block, toBlock: block })
      earlier = logs.length === 0 || (logs[0]?.logIndex ?? 0) < funding.logIndex
    }
  } catch (error) {
    throw new ChainRpcError(network.slug, error)
  }
  if (!earlier) return
  throw new JobIdFundedElsewhereError(
    `job id ${jobId} was funded on ${network.slug} under ${otherRule} ${otherKey} at ${new Date(otherFundedAtMs).toISOString()}, before this funding (block ${funding.blockNumber}, log ${funding.logIndex}) on the same chain: ` +
      'a job id belongs to its earliest funding on any network, under either of its keys; fund a job under an id of your own (job_ and a random UUID)',
  )
}

const jobFundedEvent = getAbiItem({ abi: creditFacilityV2Abi, name: 'JobFunded' })

/** A job whose id was funded earlier on another network, or under its other key on its own: the id is that funding's (409 job_id_funded_elsewhere). */
export class JobIdFundedElsewhereError extends Error {
  override readonly name = 'JobIdFundedElsewhereError'
  readonly code = 'job_id_funded_elsewhere'
}

/**
 * Job ids are one namespace in the service, while the credit contract keys a job on each network apart: a stranger who
 * read an id from someone's mined fundJob could fund that id again on another network, for one atomic unit, and
 * register it first, leaving the real job 409 job_exists and its escrow idle until reclaimDelay (an outsider's
 * finding, test/api/outsider8-job-id-other-network.test.ts). So an id belongs to its earliest funding: a job funded
 * after the same id on another network is refused. On each other network both of the id's keys are read: its key
 * there (ids.ts jobKey) and its legacy key keccak256(utf8(jobId)). A watcher who reads a per-network key in calldata
 * can compute neither (outsider29 F2: with one key on every network, funding that key elsewhere first took the id
 * without knowing it); a legacy key in calldata is the id's legacy key everywhere, so a job funded under it stays
 * open to that squat. Each other network's job is read there with its latest
 * block, a read of the caller's from that network's budget (503 chain_reads_exhausted past it, so that nobody skips
 * the check by spending it); a network whose chain follower stopped or whose RPC does not answer is passed over, so
 * one network's outage does not stop registrations on the others (a squat then succeeds only during it).
 *
 * The two chains' clocks are not one clock (outsider23: on a chain whose timestamps ran 10 minutes behind another's, a
 * funding made after the real one was "earlier"), so the fundings are ordered on the service's clock through each
 * chain's latest block (funding-order.ts fundedBefore): this network's, read by checkReclaimWindow, and the other's,
 * read with its job. Fundings closer than the estimate's uncertainty (both block times, two seconds and the reads'
 * span) are ordered by their timestamps as before (the same second a tie, which the first registration takes): exact
 * when the clocks agree, wrong only for fundings closer than the clocks' skew. Where the clocks' order goes against
 * the timestamps only through a latest block older by the wall clock than a block time (a lagging RPC node, a chain
 * behind the wall clock), the order is unsettled: 503 chain_unavailable, retry (a stale head of the real chain let a
 * squat after it pass, and one of the registering chain refused an honest registration 409: a review's finding).
 */
async function refuseLaterFunding(service: ServiceCore, caller: Address, clientKey: string, jobId: string, registering: FundingOnChain): Promise<void> {
  const others = service.networks.filter((other) => other.slug !== registering.slug && service.followers.get(other.slug)?.fatal === undefined)
  if (others.length === 0) return
  for (const other of others) service.chainReads.take(other.slug, caller, clientKey)
  const legacyKey = legacyJobKey(jobId)
  const fundings = await Promise.all(
    others.map(async (other): Promise<FundingOnChain | undefined> => {
      try {
        const { publicClient } = service.clientsOf(other.slug)
        const getJob = (key: Hex) => publicClient.readContract({ address: other.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [key] })
        // At once: the head bounds the chain's clock from below whichever block the job is read at. The id's two keys
        // there: its key on that network and its legacy key (a client may still fund under it).
        const { value: [, ...jobs], clock } = await readChainClock(
          () => Promise.all([publicClient.getBlock({ blockTag: 'latest' }), getJob(jobKey(other, jobId)), getJob(legacyKey)]),
          ([head]) => Number(head.timestamp) * 1000,
        )
        const fundedAt = jobs.map((job) => job.fundedAt).filter((at) => at !== 0n)
        if (fundedAt.length === 0) return undefined
        const earliest = fundedAt.reduce((a, b) => (a < b ? a : b))
        return { slug: other.slug, fundedAtMs: Number(earliest) * 1000, clock, blockTimeMs: blockTimeMsOf(other) }
      } catch {
        return undefined
      }
    }),
  )
  for (const funding of fundings) {
    if (funding === undefined) continue
    const earlier = fundedBefore(funding, registering)
    if (earlier === undefined) continue
    if (earlier.by === 'unsettled') {
      const [stale, apart] = earlier.network === registering.slug ? [registering, funding] : [funding, registering]
      throw new ChainBehindError(
        earlier.network,
        `its latest block read now is ${Math.ceil(earlier.excessMs / 1000)} s older by the wall clock than its block time allows, too old to tell whether job id ${jobId}'s funding on ${apart.slug} came before or after the one on ${stale.slug} ` +
          '(a lagging RPC node, or a chain whose clock runs behind the wall clock)',
      )
    }
    const at = (ms: number) => new Date(ms).toISOString()
    const seconds = (ms: number) => Math.floor(ms / 1000)
    const ageS = (f: FundingOnChain) => seconds(f.clock.headMs - f.fundedAtMs)
    throw new JobIdFundedElsewhereError(
      `job id ${jobId} was funded on ${funding.slug} at ${at(funding.fundedAtMs)} by its chain's clock, before this funding on ${registering.slug} at ${at(registering.fundedAtMs)} by its own: ` +
        (earlier.by === 'clocks'
          ? `by the chains' latest blocks (${funding.slug}'s ${ageS(funding)} s after its funding, ${registering.slug}'s ${ageS(registering)} s after this one) it came ${seconds(earlier.marginMs)} s earlier, more than the ${Math.ceil(earlier.uncertaintyMs / 1000)} s the chains' clocks leave uncertain; `
          : earlier.uncertaintyMs === undefined
            ? 'the block time of one of the chains is not known, so their timestamps order the two; '
            : `the chains' latest blocks put the two within ${Math.ceil(earlier.uncertaintyMs / 1000)} s of each other, too close for their clocks to order, so their timestamps do; `) +
        'a job id belongs to its earliest funding on any network; fund a job under an id of your own (job_ and a random UUID)',
    )
  }
}

/**
 * Reads of the chain while the follower moves on: past this many, the registration answers 503 (retry). Each read
 * after the first covers only the blocks the follower applied meanwhile, so it is short and the reads converge.
 */
const postedCollateralReadsMax = 20

/**
 * The job's CollateralPosted facts that the chain follower has passed (from the funding's block to the last block of
 * the network whose batch the engine applied): the follower could not apply them to a job the service did not know,
 * and applies every later one itself once the job exists. Resolves only while that block is still the last applied,
 * so that the caller's command, run in the same synchronous section, leaves no block between the two paths; while the
 * follower moves, the blocks it applied meanwhile are read too.
 */
async function collateralPostedBefore(service: ServiceCore, slug: string, jobId: string, key: Hex, fundedAtBlock: bigint): Promise<FacilityFactOf<'CollateralPosted'>[]> {
  const appliedUpTo = () => service.appliedChainBlocks.get(slug) ?? service.followers.get(slug)?.cursor?.blockNumber
  const facts: FacilityFactOf<'CollateralPosted'>[] = []
  let readUpTo: bigint | undefined
  for (let read = 0; read < postedCollateralReadsMax; read++) {
    const toBlock = appliedUpTo()
    // Nothing applied yet: the follower's first batch comes after the job exists and brings every posting.
    if (toBlock === undefined || toBlock < fundedAtBlock) return facts
    if (readUpTo !== undefined && toBlock <= readUpTo) return facts
    const heldBefore = facts.reduce((sum, fact) => sum + fact.args.amount, 0n)
    const read = await collateralPostedUpTo(service.clientsOf(slug), service.network(slug).creditContract, {
      // Nothing was advanced on a job the service does not know yet, so nothing was liquidated from it.
      jobKey: key, fromBlock: readUpTo === undefined ? fundedAtBlock : readUpTo + 1n, toBlock, heldBefore, usedBefore: 0n,
    })
    // Ended on chain in a block the follower applied while the job was unknown to the engine (a reclaim mined after
    // checkReclaimWindow read the head): the follower dropped that event, so a job registered now would stay live
    // over an escrow that is gone.
    if (!read.open) throw new JobRegistrationRefusedError('job_not_open_on_chain', `job ${jobId} ended on chain while it was registered: its escrow is no longer held`)
    facts.push(...read.postings)
    // Each posting is a used-proof record of the registration's commit, whose records are bounded (a commit past
    // the bound would stop the service): more is refused. Only the job's borrower can post.
    const postingsMax = service.config.collateralPostingsPerJobMax
    if (facts.length > postingsMax) {
      throw new TooManyPostingsError(`job ${jobId} has more than ${postingsMax} collateral postings on chain before its registration; post collateral in fewer, larger amounts`)
    }
    readUpTo = toBlock
    if (appliedUpTo() === toBlock) return facts
  }
  throw new ChainRpcError(slug, new Error(`the chain follower kept moving while job ${jobId}'s collateral was read; retry`))
}

export async function postCollateral(
  service: ServiceCore,
  mutation: Mutation<CollateralPosition>,
  caller: Address,
  /** As createJob's. */
  clientKey: string,
  jobId: string,
  body: { amountAtomic: bigint; txHash: string },
): Promise<StoredResponse> {
  const job = valueOf(service.engine.planCollateral({ jobId, caller }))
  const token = service.token(service.network(job.network), job.asset)
  const fact = await service.prove(job.network, caller, clientKey, 'CollateralPosted', body.txHash, {
    jobKey: job.jobKey, borrower: job.borrower, asset: token.address, amount: body.amountAtomic,
  })
  const input = {
    jobId, caller, borrower: getAddress(fact.args.borrower), amountAtomic: fact.args.amount,
    proof: { network: job.network, txHash: fact.txHash, logIndex: fact.logIndex },
  }
  // The chain follower (or the job's registration) counted this posting already: the report answers the same position.
  if (service.store.proofs.get(fact.proofKey)?.usedBy === collateralProofUse(jobId)) return service.apply(mutation, () => service.engine.reportedCollateral(input))
  const proof = service.useProof(fact, collateralProofUse(jobId))
  return service.apply(mutation, () => service.engine.postCollateral(input, service.now()), () => [proof])
}

export async function requestCredit(
  service: ServiceCore,
  mutation: Mutation<UnderwritingDecision>,
  caller: Address,
  body: Omit<CreditRequestInput, 'supplierAddress'> & { supplierAddress?: Address },
): Promise<StoredResponse> {
  const network = service.network(body.network)
  service.token(network, body.asset)
  service.refuseStoppedNetwork(network.slug)
  // The engine checks the supplier against its directory (src/engine/suppliers.ts): unknown, unverified or not
  // allowed, the request is declined.
  // `caller` first: a spread followed by a key it adds takes V8's slow path (about 0.9 µs here, against 0.1 with the key
  // before the spread; issue 11, see src/engine/views.ts). The engine reads the input's fields by name, never its order.
  return service.apply(mutation, () => service.engine.requestCredit({ caller, ...body }, service.now()))
}
