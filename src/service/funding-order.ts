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

/**
 * How two fundings were ordered: by the chains' latest blocks, or by their timestamps as they are; or not now
 * ('unsettled'): the clocks' order stands only on `network`'s latest block being at most a block time old, the
 * timestamps say the other way, and that block is `excessMs` older than that by the wall clock (503, retry).
 */
export type FundingOrder =
  | { by: 'clocks'; marginMs: number; uncertaintyMs: number }
  | { by: 'timestamps'; uncertaintyMs: number | undefined }
  | { by: 'unsettled'; network: string; excessMs: number }

/**
 * How much older than a block time the reading's latest block may be, by its age on the wall clock beyond the read:
 * a bound on a chain whose clock is not ahead of the wall clock (on one ahead of it, the age is short or negative, and
 * bounds nothing); 0 when the block is no older than that.
 */
function headExcessMs(clock: ChainClockReading, blockTimeMs: number): number {
  return Math.max(0, clock.answeredWallMs - clock.headMs - blockTimeMs - (clock.answeredMs - clock.sentMs))
}

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
 * though a blockTimeMs is set) makes its chain's funding look later than it was, by the excess: the lower bound above
 * fails. The clocks' order against the timestamps' stands on one latest block's age: the registering one's when the
 * other funding is the older, the other's when it is the younger. That block's age on the wall clock beyond a block
 * time (headExcessMs) bounds the excess on a chain whose clock is not ahead of the wall clock: past the uncertainty
 * and that excess, the clocks order the two; within it, where the timestamps say the other way, the order is
 * unsettled (a stale head, or a chain behind the wall clock: nothing to tell them apart), and the registration is
 * asked to retry. Before, a stale head of the real chain let a squat after it pass with the clocks agreeing (a
 * review's finding, test/api/review31-job-id-stale-head.test.ts), and a stale head of the registering chain refused
 * an honest registration 409 as if for good.
 */
export function fundedBefore(other: FundingOnChain, registering: FundingOnChain): FundingOrder | undefined {
  const otherFirstByTimestamps = other.fundedAtMs < registering.fundedAtMs
  const byTimestamps = (uncertaintyMs: number | undefined) => (otherFirstByTimestamps ? { by: 'timestamps' as const, uncertaintyMs } : undefined)
  if (registering.blockTimeMs === undefined || other.blockTimeMs === undefined) return byTimestamps(undefined)
  const registeringAgeMs = registering.clock.headMs - registering.fundedAtMs
  const otherAgeMs = other.clock.headMs - other.fundedAtMs
  const readsSpanMs = Math.max(other.clock.answeredMs, registering.clock.answeredMs) - Math.min(other.clock.sentMs, registering.clock.sentMs)
  const uncertaintyMs = registering.blockTimeMs + other.blockTimeMs + 2 * timestampSlackMs + readsSpanMs
  // How much earlier, on the service's clock, the other funding was mined, give or take the uncertainty.
  const marginMs = otherAgeMs - registeringAgeMs
  if (marginMs > uncertaintyMs) {
    const excessMs = headExcessMs(registering.clock, registering.blockTimeMs)
    if (otherFirstByTimestamps || marginMs > uncertaintyMs + excessMs) return { by: 'clocks', marginMs, uncertaintyMs }
    return { by: 'unsettled', network: registering.slug, excessMs }
  }
  if (marginMs < -uncertaintyMs) {
    const excessMs = headExcessMs(other.clock, other.blockTimeMs)
    if (!otherFirstByTimestamps || marginMs < -(uncertaintyMs + excessMs)) return undefined
    return { by: 'unsettled', network: other.slug, excessMs }
  }
  return byTimestamps(uncertaintyMs)
}
