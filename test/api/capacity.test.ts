// Limits of the service named in its configuration: the chain watcher reads a bounded number of lender wallets per
// network. Since issue 10 (hole 2) the bound counts funded wallets only: a registration never takes a slot (its
// wallet waits, unread, for its first transfer), so unfunded registrations cannot lock honest lenders out; a funded
// wallet beyond the bound keeps waiting (out of the books) until a slot is free.
import t from 'tap'
import { fund, fundedAccount, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { walletsWatchedPerNetworkMax: 1 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('beyond the watched-wallet limit a registration is accepted; its funded wallet waits for a slot', async (t) => {
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(10) })
  const account = await fundedAccount(h.devnet, h.network, 0n)
  const second = await signedIn(h.url, account)
  const reply = await second.post('/lenders/register', {
    availableLiquidityAtomic: usdc(10).toString(),
    asset: USDC,
    networks: [h.network.slug],
    minFeeBps: 100,
    maxDurationSeconds: 3600,
    acceptedRiskBands: ['A'],
  })
  t.equal(reply.status, 201, 'registered: an unfunded wallet takes no slot')
  const session = reply.body.sessionKey.address as `0x${string}`
  const watcher = h.app.service.watcher
  t.ok(watcher.isWaitingForFunds(h.network.slug, session))
  const block = watcher.status()[0]?.lastBlock ?? 0n
  await fund(h.devnet, h.network, session, usdc(10))
  await until(() => (watcher.status()[0]?.lastBlock ?? 0n) > block + 1n, 10_000, 'the watcher passed the funding block')
  t.equal(watcher.status()[0]?.holders, 1, 'the cap holds')
  t.ok(watcher.isWaitingForFunds(h.network.slug, session), 'the funded wallet waits for a slot')
  t.ok(h.app.service.engine.isParked(account.address), 'and its lender stays out of the books')
})
