// An outsider against the Idempotency-Key's scope (README "The API at a glance": "scoped to the wallet, the method and
// the concrete path"; "addresses are accepted in any case"). The same lender's withdrawal under one key, sent to
// /lenders/<checksummed>/withdraw and then to /lenders/<lower case>/withdraw (a client that normalizes the address
// differently on its retry), ran twice: the scope took the path as written, while both name one resource. Now an
// address in the path counts checksummed (and a supplier's domain in lower case), so the second is the first's replay.
// What it cost: nothing but a retry written another way; each run lowers the lender's liquidity again.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedIn, startHarness, USDC, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(() => h?.stop())

t.test('one key, one withdrawal, however the path spells the lender\'s address', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const lender = await signedIn(h.url, account)
  const registered = await lender.post('/lenders/register', { availableLiquidityAtomic: '1000000', asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 86_400, acceptedRiskBands: ['A'] })
  t.equal(registered.status, 201)
  const key = 'outsider20-withdraw-1'
  const first = await lender.post(`/lenders/${account.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: key })
  t.equal(first.status, 200, 'the first withdrawal runs')
  t.equal(first.headers.get('idempotent-replayed'), null)
  const spellings = [account.address.toLowerCase(), `0x${account.address.slice(2).toUpperCase()}`]
  for (const spelling of spellings) {
    const retry = await lender.post(`/lenders/${spelling}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: key })
    t.equal(retry.status, 200, `the retry at /lenders/${spelling}/withdraw is answered`)
    t.equal(retry.headers.get('idempotent-replayed'), 'true', 'from the first one\'s stored answer')
    t.same(retry.body, first.body, 'the same answer')
  }
  const wallet = await lender.get(`/lenders/${account.address}/wallet`)
  t.equal(wallet.body.activity.policyAvailableAtomic, '999999', 'one unit withdrawn, once')
})
