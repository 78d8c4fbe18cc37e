// LMDB leaves pages a transaction allocated at the end of data.mdb and freed again before its commit unwritten
// ("loose" pages), so after a commit that removes many records (the unfunded-lender sweep's) the file can end before
// the last page its meta pages name. The store's header check took that for a truncated file and refused every start
// after it, a clean restart included (store_corrupt). Pages past the end are now accepted when the free list names
// every one of them (src/store/page-walk.ts checkPagesPastEnd); a file cut short where a tree has pages is still
// refused (test/store/open.test.ts). Real service, anvil and LMDB.
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { checkDataFile } from '../../src/store/data-file.ts'
import { checkPagesPastEnd } from '../../src/store/page-walk.ts'
import { signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

let nowMs = Date.now()
const h = await startHarness({ clock: () => nowMs })
t.teardown(() => h.stop())

t.test('a store whose last pages are free ones past the file\'s end starts again, and they are used again', async (t) => {
  const body = { availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A', 'B'] }
  const file = join(h.dataDir, 'data.mdb')
  // Where LMDB puts the pages a commit frees depends on the tree's shape, which the wallets' random addresses vary:
  // a round of 90 registrations and their sweep nearly always leaves the file ending before its last page (every
  // run until one in CI did not), so the rounds go on until it does, at most five.
  let check = checkDataFile(file)
  for (let round = 1; round <= 5 && !(check.ok && check.pagesPastEnd !== null); round++) {
    let registered = 0
    for (let i = 0; i < 90; i++) if ((await (await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))).post('/lenders/register', body)).status === 201) registered++
    t.equal(registered, 90, `round ${round}: 90 registrations`)
    nowMs += h.app.config.lenderUnfundedTtlSeconds * 1000 + 1000
    let removed = 0
    do removed += (await h.app.lenderSweep.run()).length
    while (h.app.lenderSweep.due)
    t.equal(removed, 90, `round ${round}: the sweep removed the registrations`)
    check = checkDataFile(file)
  }
  t.ok(check.ok && check.pagesPastEnd !== null, 'the file ends before its last page (what this test is about)')
  if (check.ok) t.same(checkPagesPastEnd(file, check), { ok: true }, 'every page past the end is free')

  await h.restart()
  t.equal((await fetch(`${h.url}/health`)).status, 200, 'the service starts again on it')
  t.equal((await (await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))).post('/lenders/register', body)).status, 201, 'and writes to it')
  await h.restart()
  t.equal((await fetch(`${h.url}/health`)).status, 200, 'and again')
})
