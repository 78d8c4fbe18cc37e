// The hub derives an event's text only when a connection needs it: a commit nobody reads builds no view, no JSON and
// no signed lease action, and what a live subscriber or a resume receives is, byte for byte, what deriving every event
// at its commit gave (the oracle below), each event derived once and never changed after it is sent.
import t from 'tap'
import type { Address } from 'viem'
import { toWire } from '../../src/api/wire.ts'
import { advanceViewFromSnapshot, jobViewFromSnapshot, leaseViewFromSnapshot, offerViewFromSnapshot, type Engine } from '../../src/engine/index.ts'
import type { BorrowerRecord, Change, EngineResult, LeaseView } from '../../src/engine/types.ts'
import { EventHub } from '../../src/stream/hub.ts'
import { ASSET, BORROWER, CLIENT, NET, T0, creditRequest, hash, lenderInput, newEngine, repaidFact, unwrap } from '../engine/fixtures/world.ts'
import { fakeConnection } from './fixtures.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

interface Commit {
  atMs: number
  changes: readonly Change[]
}

const LENDERS = [lenderInput(1, { minFeeBps: 100 }), lenderInput(2, { minFeeBps: 200 })]
const WALLETS: Address[] = [BORROWER, CLIENT, ...LENDERS.map((l) => l.address)]

/**
 * A recorded sequence of the engine's commits touching every kind the stream carries: a job funded, an offer on it
 * leased, its lease expired and the offer leased again, the payment (advance, lease paid, offer funded), the repayment
 * (advance repaid, the borrower's record).
 */
function recordedCommits(): Commit[] {
  const { engine } = newEngine({ leaseTtlMs: 30_000 })
  const commits: Commit[] = []
  let atMs = T0
  const commit = <T>(run: (engine: Engine, nowMs: number) => EngineResult<T>): T => {
    atMs += 1000
    const result = run(engine, atMs)
    const value = unwrap(result)
    if (result.ok) commits.push({ atMs, changes: result.changes })
    return value
  }
  for (const lender of LENDERS) commit((e, now) => e.registerLender(lender, now))
  commit((e, now) => e.createJob({
    jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: CLIENT, borrower: BORROWER, network: NET, asset: ASSET, receivableAtomic: 10_000n, dueAtMs: T0 + 7 * 86_400_000,
    funding: { network: NET, txHash: hash(9000), logIndex: 0 }, caller: CLIENT,
  }, now))
  const offerId = commit((e, now) => e.requestCredit(creditRequest({ repaymentSource: 'job_1', amountAtomic: 1000n }), now)).offer?.offerId as string
  commit((e, now) => e.matchOffer({ offerId, caller: BORROWER }, now))
  // The first lease runs out on chain time; the dispatch that follows leases the offer again.
  atMs += 60_000
  commit((e, now) => e.observeChain({ network: NET, toBlock: BigInt(now), toBlockHash: '0x', toBlockTimeMs: now, events: [] }, now))
  commit((e, now) => e.dispatch(now))
  const lease = engine.getOffer(offerId)?.currentLeaseId
  const live = lease === undefined || lease === null ? undefined : engine.getLease(lease)
  if (live === undefined) throw new Error('the offer was not leased again')
  const advance = commit((e, now) => e.recordSupplierPayment({
    network: NET, txHash: hash(1), logIndex: 0, offerId, payer: live.payer, supplier: live.supplierAddress, asset: ASSET, amountAtomic: live.amountAtomic, caller: live.lender,
  }, now))
  commit((e, now) => e.repayAdvance(repaidFact(engine, advance.advanceId, hash(2)), now))
  return commits
}

/** A lease action that depends on the lease alone, so an eager and a lazy derivation of it agree. */
const leaseTerms = (lease: LeaseView) => ({ kind: 'pay_supplier', leaseId: lease.leaseId, deadline: String(Math.floor(lease.expiresAtMs / 1000)) })

/**
 * The events as the hub derived them before it was lazy (every change at its commit): per event its wallets, from the
 * view, and its body. The oracle of the byte-for-byte comparison.
 */
function eagerEvents(commits: readonly Commit[]): Array<{ wallets: Address[]; body: object }> {
  const events: Array<{ wallets: Address[]; body: object }> = []
  for (const { atMs, changes } of commits) {
    const at = new Date(atMs).toISOString()
    for (const change of changes) {
      const event = eagerEvent(change, at)
      if (event !== undefined) events.push(event)
    }
  }
  return events
}

/** The texts of `wallet`'s events among `events`, numbered as the wallet's own (1, 2, 3, ...). */
function walletTexts(events: ReadonlyArray<{ wallets: Address[]; body: object }>, wallet: Address, epoch: string): string[] {
  return events.filter((e) => e.wallets.includes(wallet)).map((e, i) => JSON.stringify({ type: 'event', epoch, seq: i + 1, ...e.body }))
}

function eagerEvent(change: Change, at: string): { wallets: Address[]; body: object } | undefined {
  const both = (a: Address, b: Address) => (a === b ? [a] : [a, b])
  if (change.kind === 'lease') {
    const lease = leaseViewFromSnapshot(change.record)
    return { wallets: [lease.lender], body: { at, kind: 'lease', lease: toWire(lease), action: lease.state === 'leased' ? leaseTerms(lease) : null } }
  }
  if (change.kind === 'offer') {
    const offer = offerViewFromSnapshot(change.record)
    return { wallets: [offer.borrower], body: { at, kind: 'offer', offer: toWire(offer) } }
  }
  if (change.kind === 'advance') {
    const advance = advanceViewFromSnapshot(change.record)
    return { wallets: both(advance.lender, advance.borrower), body: { at, kind: 'advance', advance: toWire(advance) } }
  }
  if (change.kind === 'job') {
    const job = jobViewFromSnapshot(change.record)
    return { wallets: both(job.borrower, job.client), body: { at, kind: 'job', job: toWire(job) } }
  }
  if (change.kind !== 'borrower') return undefined
  const { address, suspended, suspendedAtMs, reputationBps, advancesRepaid, advancesDefaulted, shortfallAtomic } = change.record as BorrowerRecord
  const suspendedAt = suspendedAtMs === null ? null : new Date(suspendedAtMs).toISOString()
  return { wallets: [address], body: { at, kind: 'passport', borrower: { address, suspended, suspendedAt, reputationBps, advancesRepaid, advancesDefaulted, shortfallAtomic: String(shortfallAtomic) } } }
}

/** A hub on a clock that reads each commit's time, fed `commits` in order. */
function feed(hub: EventHub, clock: { nowMs: number }, commits: readonly Commit[]): void {
  for (const { atMs, changes } of commits) {
    clock.nowMs = atMs
    hub.publish(changes)
  }
}

const eventTexts = (sent: readonly string[]) => sent.filter((text) => JSON.parse(text).type === 'event')
const commits = recordedCommits()

t.test('the recorded commits cover every kind of event, a leased lease and every wallet', async (t) => {
  const kinds = new Set(commits.flatMap((c) => c.changes.map((change) => change.kind)))
  for (const kind of ['lease', 'offer', 'advance', 'job', 'borrower']) t.ok(kinds.has(kind as Change['kind']), `a ${kind} change`)
  const events = eagerEvents(commits) as Array<{ wallets: Address[]; body: { kind: string; action?: unknown } }>
  t.ok(events.some((e) => e.body.action != null && e.body.kind === 'lease'), 'a lease event with an action')
  for (const wallet of WALLETS) t.ok(events.some((e) => e.wallets.includes(wallet)), `an event for ${wallet}`)
})

t.test('a commit nobody reads derives nothing: no lease action is built, yet every event is numbered', async (t) => {
  let actions = 0
  const clock = { nowMs: T0 }
  const hub = new EventHub({ leaseAction: (lease) => (actions++, leaseTerms(lease)) }, {}, () => clock.nowMs)
  feed(hub, clock, commits)
  t.equal(actions, 0, 'the lease-action source was never called')
  t.equal(hub.stats().lastPosition, eagerEvents(commits).length, 'one ring position per event, as before')
  for (const wallet of WALLETS) t.equal(hub.walletSeqs(wallet).seq, walletTexts(eagerEvents(commits), wallet, hub.epoch).length, `one sequence number per event of ${wallet}`)
})

t.test('live subscribers and resumes receive exactly the texts of the eager derivation', async (t) => {
  for (const subscribed of [true, false]) {
    const clock = { nowMs: T0 }
    const hub = new EventHub({ leaseAction: leaseTerms }, {}, () => clock.nowMs)
    const live = new Map(subscribed ? WALLETS.map((wallet) => [wallet, fakeConnection(hub, wallet)]) : [])
    feed(hub, clock, commits)
    const expected = eagerEvents(commits)
    for (const wallet of WALLETS) {
      const mine = walletTexts(expected, wallet, hub.epoch)
      if (subscribed) t.same(eventTexts(live.get(wallet) ?? []), mine, `live, ${wallet}`)
      t.same(eventTexts(fakeConnection(hub, wallet, { since: 0, epoch: hub.epoch })), mine, `resumed from 0 ${subscribed ? 'after live delivery' : 'with nobody subscribed at the commits'}, ${wallet}`)
      const middle = mine.length >> 1
      t.same(eventTexts(fakeConnection(hub, wallet, { since: middle, epoch: hub.epoch })), mine.slice(middle), `resumed from ${middle}, ${wallet}`)
    }
  }
})

t.test('an event is derived once: every connection gets the text first derived, and it never changes', async (t) => {
  // A source whose answer differs at every call: a second derivation would show.
  let actions = 0
  const clock = { nowMs: T0 }
  const hub = new EventHub({ leaseAction: (lease) => ({ leaseId: lease.leaseId, call: ++actions }) }, {}, () => clock.nowMs)
  const lender = LENDERS[0]?.address as Address
  const first = fakeConnection(hub, lender)
  const second = fakeConnection(hub, lender)
  feed(hub, clock, commits)
  const resumed = fakeConnection(hub, lender, { since: 0, epoch: hub.epoch })
  const leased = eventTexts(first).filter((text) => JSON.parse(text).action !== null)
  t.ok(leased.length > 0, 'the lender was sent a lease with its action')
  t.equal(actions, leased.length, 'one action built per leased lease event, for three connections')
  t.same(eventTexts(second), eventTexts(first), 'the second live connection got the same texts')
  t.same(eventTexts(resumed), eventTexts(first), 'and so did the resume')
})

t.test('a lease event first derived late carries the action its source gives then (null: no longer deliverable), and keeps it', async (t) => {
  let deliverable = true
  const clock = { nowMs: T0 }
  const hub = new EventHub({ leaseAction: (lease) => (deliverable ? leaseTerms(lease) : null) }, {}, () => clock.nowMs)
  feed(hub, clock, commits)
  const lender = LENDERS[0]?.address as Address
  // Between the commit and the resume the lease's offer left memory (what the app's source answers null for).
  deliverable = false
  const late = eventTexts(fakeConnection(hub, lender, { since: 0, epoch: hub.epoch })).map((text) => JSON.parse(text))
  const leases = late.filter((m) => m.kind === 'lease' && m.lease.state === 'leased')
  t.ok(leases.length > 0, 'a leased lease was resumed')
  t.ok(leases.every((m) => m.action === null), 'its action is null')
  const eager = walletTexts(eagerEvents(commits), lender, hub.epoch).map((text) => JSON.parse(text))
  t.same(leases, leases.map((m) => ({ ...eager[m.seq - 1], action: null })), 'the rest is what the eager derivation gave: the lease as its commit left it, at the commit\'s time')
  deliverable = true
  t.same(eventTexts(fakeConnection(hub, lender, { since: 0, epoch: hub.epoch })).map((text) => JSON.parse(text)), late, 'a later resume gets the same texts')
})

t.test('a lease action source that throws gives the event action null; the stream goes on', async (t) => {
  const clock = { nowMs: T0 }
  const hub = new EventHub({ leaseAction: () => { throw new Error('signer unavailable') } }, {}, () => clock.nowMs)
  const lender = LENDERS[0]?.address as Address
  const warnings: string[] = []
  const onWarning = (warning: Error & { code?: string }) => warnings.push(String(warning.code))
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const live = fakeConnection(hub, lender)
  feed(hub, clock, commits)
  const expected = walletTexts(eagerEvents(commits), lender, hub.epoch).map((text) => ({ ...JSON.parse(text), action: null }))
  const received = eventTexts(live).map((text) => ({ ...JSON.parse(text), action: null }))
  t.same(received, expected, 'every event of the lender arrived, in order')
  t.ok(eventTexts(live).map((text) => JSON.parse(text)).filter((m) => m.kind === 'lease').every((m) => m.action === null), 'lease actions are null')
  await new Promise((resolve) => setImmediate(resolve))
  t.ok(warnings.includes('STREAM_LEASE_ACTION_FAILED'), 'the failure is reported as a warning')
})
