// Limits of the service named in its configuration: the chain watcher follows a bounded number of lender wallets
// per network, and a registration beyond it is refused before anything changes.
import t from 'tap'
import { fundedAccount, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { walletsWatchedPerNetworkMax: 1 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a lender registration beyond the watched-wallet limit is a 503 and changes nothing', async (t) => {
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(10) })
  const second = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const before = (await second.get('/credit/state')).body
  const reply = await second.post('/lenders/register', {
    availableLiquidityAtomic: usdc(10).toString(),
    asset: USDC,
    networks: [h.network.slug],
    minFeeBps: 100,
    maxDurationSeconds: 3600,
    acceptedRiskBands: ['A'],
  })
  t.equal(reply.status, 503)
  t.equal(reply.body.code, 'wallet_watch_full')
  t.same((await second.get('/credit/state')).body, before, 'no lender was registered')
})
