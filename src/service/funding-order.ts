// Which of two fundings of one job id on two networks came first, when each chain's block timestamps keep a clock of
// their own (outsider23's finding: with one chain 10 minutes ahead of another, a stranger's funding of a published id
// on the lagging chain, made after the real one, was "earlier" by the timestamps). src/service/borrowers.ts
// refuseLaterFunding orders them here on one clock: the service's monotonic clock, through each chain's latest block.
import type { NetworkConfig } from '../chain/config.ts'
import { knownBlockTimeMs } from '../chain/follower.ts'

/** The network's expected time between blocks: its configured blockTimeMs, or its known chain's; undefined otherwise. */
export function blockTimeMsOf(network: NetworkConfig): number | undefined {
  return network.blockTimeMs ?? knownBlockTimeMs.get(network.chainId)
}

/**
 * One read of a chain's latest block: its timestamp (ms), the service's monotonic clock (performance.now) around the
 * read, and the wall clock (Date.now) when it was answered.
 */
export type ChainClockReading = { headMs: number; sentMs: number; answeredMs: number; answeredWallMs: number }

/** Reads a chain's latest block through `read` (its timestamp in ms), with the clocks around it. */
export async function readChainClock<T>(read: () => Promise<T>, headMsOf: (value: T) => number): Promise<{ value: T; clock: ChainClockReading }> {
  const sentMs = performance.now()
  const value = await read()
  const answeredMs = performance.now()
  return { value, clock: { headMs: headMsOf(value), sentMs, answeredMs, answeredWallMs: Date.now() } }
}

/** A funding of the id: its block's timestamp (ms) on its chain, its chain's latest block read at the registration, its block time. */
export type FundingOnChain = {
  slug: string
  fundedAtMs: number
  clock: ChainClockReading
  /** The chain's expected time between blocks (config blockTimeMs or the known chain's), undefined when not known. */
  blockTimeMs: number | undefined
}

/** Block timestamps are whole seconds: each one is up to a second behind its chain's clock. */
const timestampSlackMs = 1_000

/** How two fundings were ordered: by the chains' latest blocks, or by their timestamps as they are. */
export type FundingOrder = { by: 'clocks'; marginMs: number; uncertaintyMs: number } | { by: 'timestamps'; uncertaintyMs: number | undefined }

/**
 * Whether `other` was funded before `registering` (so that `registering` is refused), and how that was decided.
 *
 * A chain's clock runs at an offset from the service's: offset = (a block's timestamp) - (when the block was mined, on
 * the service's clock). Its latest block, read between sentMs and answeredMs, was mined before answeredMs, and, on a
 * chain that makes a block every blockTimeMs, not more than one block time before sentMs. So a funding whose block
 * has timestamp fundedAt was mined, by the service's clock, between
 *   fundedAt - head + sentMs - blockTime - 1 s   and   fundedAt - head + answeredMs + 1 s
 * (a second for the whole-second timestamps): each funding's age by its own chain's clock (head - fundedAt) places it
 * on the service's. When the two ages differ by more than the uncertainty (both block times, two seconds, and the
 * span of the reads; the other chain's block time stands for chains whose blocks carry their slot's start, seconds
 * before they are seen), the older funding is the earlier one, whatever the timestamps say.
 *
 * Closer than that, the clocks cannot order them, and the timestamps do as they are (as before: the same second is a
 * tie, which the first registration takes): with chains whose clocks agree that is exact, and with clocks apart by a
 * skew it errs only for fundings less than the skew apart. A chain of unknown block time (one that mines only on
 * transactions: its head may be hours old, so its clock has no upper bound) is ordered by the timestamps too.
 *
 * A latest block older than a block time (a lagging RPC node, missed blocks, a chain that mines only on transactions
 * though a blockTimeMs is set) makes its chain's funding look later than it was, by the excess. Where that would let
 * the registering funding pass against an earlier timestamp of `other`'s (`other` "later" by the clocks), the excess
 * is bounded by the other head's age on the wall clock (answeredWallMs - headMs): that bounds it on a chain whose
 * clock is not ahead of the wall clock, and a chain ahead of it gives a negative age, which bounds nothing (the block
 * time holds as before). So a squatter whose funding came after the real one cannot pass through a stale head of the
 * real chain (a review's finding: with the clocks agreeing, a squat 2 s after the real funding, registered while the
 * real chain's latest block was the funding's, took the id; test/api/review31-job-id-stale-head.test.ts). A stale head
 * of the registering chain only makes its funding look later: an honest registration may be refused (409) until its
 * RPC answers a newer block, the squat's meanwhile still refused.
 */
export function fundedBefore(other: FundingOnChain, registering: FundingOnChain): FundingOrder | undefined {
  const byTimestamps = (uncertaintyMs: number | undefined) => (other.fundedAtMs < registering.fundedAtMs ? { by: 'timestamps' as const, uncertaintyMs } : undefined)
  if (registering.blockTimeMs === undefined || other.blockTimeMs === undefined) return byTimestamps(undefined)
  const registeringAgeMs = registering.clock.headMs - registering.fundedAtMs
  const otherAgeMs = other.clock.headMs - other.fundedAtMs
  const readsSpanMs = Math.max(other.clock.answeredMs, registering.clock.answeredMs) - Math.min(other.clock.sentMs, registering.clock.sentMs)
  const uncertaintyMs = registering.blockTimeMs + other.blockTimeMs + 2 * timestampSlackMs + readsSpanMs
  // How much earlier, on the service's clock, the other funding was mined, give or take the uncertainty.
  const marginMs = otherAgeMs - registeringAgeMs
  if (marginMs > uncertaintyMs) return { by: 'clocks', marginMs, uncertaintyMs }
  // How much older than a block time the other's latest block may be, by its age on the wall clock (beyond its read).
  const otherHeadExcessMs = Math.max(0, other.clock.answeredWallMs - other.clock.headMs - other.blockTimeMs - (other.clock.answeredMs - other.clock.sentMs))
  if (marginMs < -(uncertaintyMs + otherHeadExcessMs)) return undefined
  return byTimestamps(marginMs < 0 ? uncertaintyMs + otherHeadExcessMs : uncertaintyMs)
}
