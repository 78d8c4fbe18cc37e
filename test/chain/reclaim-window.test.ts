// The registration's reclaim rule (src/service/borrowers.ts checkReclaimWindow) in whole seconds, as the contract
// judges both sides: reclaimJob from block.timestamp >= reclaimableAt on, paySupplier until block.timestamp <= deadline
// with deadline = floor(expiresAtMs / 1000). A lease ending in the second the reclaim opens overlaps it.
import t from 'tap'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { reclaimableWhileCreditLive, ReclaimDelays } from '../../src/chain/reclaim-window.ts'

t.test('a reclaim that opens in the last second a lease may be paid overlaps the credit', async (t) => {
  const reclaimableAtMs = 1_700_000_000_000
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs), true, 'a lease ending at the reclaim second is payable in it: before, taken')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs + 999), true, 'its deadline is that second too')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs - 1), false, 'a lease ending within the second before: its last payable second is before the reclaim')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs + 1000), true, 'a lease ending after the reclaim opens')
})

// The catalog's reclaimDelaySeconds of a network whose RPC did not answer at the start is read again (src/app/app.ts
// asks at each request of the catalog and when the follower recovers), bounded: one read of a network at a time, at
// most one begun per retryMs.
t.test('ReclaimDelays: a value not read is read again, one read at a time and at most one per retryMs', async (t) => {
  const networks = [{ slug: 'a' }, { slug: 'b' }] as NetworkConfig[]
  let nowMs = 0
  const pending: Array<{ slug: string; settle: (value: bigint | Error) => void }> = []
  const delays = new ReclaimDelays(networks, {
    retryMs: 5_000,
    nowMs: () => nowMs,
    readDelay: (network) => new Promise((resolve, reject) => pending.push({ slug: network.slug, settle: (value) => (value instanceof Error ? reject(value) : resolve(value)) })),
    readBorrowerMayReclaim: async (network) => network.slug === 'a',
  })
  const told: string[] = []
  delays.onRead((slug, read) => told.push(`${slug}=${read.reclaimDelaySeconds}`))
  const starting = delays.read('a')
  pending.shift()?.settle(600n)
  await starting
  t.equal(delays.get('a'), 600, 'the start reads a')
  t.equal(delays.get('b'), null, 'b not read: null')
  delays.readMissing()
  delays.readMissing()
  t.same(pending.map((p) => p.slug), ['b'], 'one read of b, none of a (known), however often asked')
  pending.shift()?.settle(new Error('rpc down'))
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(delays.get('b'), null, 'b\'s reclaimDelay() failed: null')
  t.same(told, ['b=null'], 'its BORROWER_MAY_RECLAIM(), read, is told')
  nowMs = 4_999
  delays.readMissing()
  t.equal(pending.length, 0, 'not tried again within retryMs')
  nowMs = 5_000
  delays.readMissing()
  t.same(pending.map((p) => p.slug), ['b'], 'tried again after it')
  pending.shift()?.settle(900n)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(delays.get('b'), 900, 'read')
  t.same([delays.borrowerMayReclaim('a'), delays.borrowerMayReclaim('b')], [true, false], 'BORROWER_MAY_RECLAIM() read')
  t.same(told, ['b=null', 'b=900'], 'told to the listeners (the catalog is built again)')
  nowMs = 60_000
  delays.readMissing()
  t.equal(pending.length, 0, 'nothing more to read')
})

// review37: an RPC (or a contract) that answers reclaimDelay() and not BORROWER_MAY_RECLAIM() -- an outage of one call, a
// contract whose answer is no bool -- once kept both null (read as both or neither): the catalog's reclaimDelaySeconds,
// which read before BORROWER_MAY_RECLAIM() was, stayed null for as long as the other call failed. Each value is kept once
// read; the one missing is read again on its own.
t.test('ReclaimDelays: a reclaimDelay() read is kept when BORROWER_MAY_RECLAIM() fails; that one alone is read again', async (t) => {
  const networks = [{ slug: 'a' }] as NetworkConfig[]
  let nowMs = 0
  const calls: string[] = []
  let ruleAnswers = false
  const delays = new ReclaimDelays(networks, {
    retryMs: 5_000,
    nowMs: () => nowMs,
    readDelay: async () => {
      calls.push('reclaimDelay')
      return 600n
    },
    readBorrowerMayReclaim: async () => {
      calls.push('BORROWER_MAY_RECLAIM')
      if (!ruleAnswers) throw new Error('InvalidBytesBooleanError')
      return false
    },
  })
  const told: Array<[string, unknown]> = []
  delays.onRead((slug, read) => told.push([slug, read]))
  await t.rejects(delays.read('a'), /BORROWER_MAY_RECLAIM\(\): Error: InvalidBytesBooleanError/, 'the start hears which call failed')
  t.equal(delays.get('a'), 600, 'the delay read is published')
  t.equal(delays.borrowerMayReclaim('a'), null, 'the rule not read: null')
  calls.length = 0
  nowMs = 5_000
  ruleAnswers = true
  delays.readMissing()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(calls, ['BORROWER_MAY_RECLAIM'], 'only the missing one is read again')
  t.equal(delays.borrowerMayReclaim('a'), false, 'read')
  t.same(told, [['a', { reclaimDelaySeconds: 600, borrowerMayReclaim: false }]], 'told to the listeners')
  nowMs = 60_000
  delays.readMissing()
  t.equal(calls.length, 1, 'nothing more to read')
})
