// The registration's reclaim rule (src/service/borrowers.ts checkReclaimWindow) in whole seconds, as the contract
// judges both sides: reclaimJob from block.timestamp >= reclaimableAt on, paySupplier until block.timestamp <= deadline
// with deadline = floor(expiresAtMs / 1000). A lease ending in the second the reclaim opens overlaps it.
import t from 'tap'
import { reclaimableWhileCreditLive } from '../../src/chain/reclaim-window.ts'

t.test('a reclaim that opens in the last second a lease may be paid overlaps the credit', async (t) => {
  const reclaimableAtMs = 1_700_000_000_000
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs), true, 'a lease ending at the reclaim second is payable in it: before, taken')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs + 999), true, 'its deadline is that second too')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs - 1), false, 'a lease ending within the second before: its last payable second is before the reclaim')
  t.equal(reclaimableWhileCreditLive(reclaimableAtMs, reclaimableAtMs + 1000), true, 'a lease ending after the reclaim opens')
})
