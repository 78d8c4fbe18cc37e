// Whether /credit-score is on, and what it charges: on by default on the embedded devnet, off with a networks file
// unless configured (and then network, price and payee must be named); CREDIT_SCORE=on|off wins over the file.
import t from 'tap'
import { parseNetworksConfig } from '../../src/chain/config.ts'
import { ConfigError, loadServiceConfig } from '../../src/app/config.ts'
import { DEVNET_PRICE_ATOMIC, MAX_TIMEOUT_SECONDS_DEFAULT, lenderReputationFullStepOf, repaymentMinimumsOf, resolveCreditScore } from '../../src/score/settings.ts'
import { SCORE_TERMS } from '../../src/score/formula.ts'

const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as const
const entry = (slug: string, chainId: number, selfFacilitate: boolean) => ({
  slug,
  chainId,
  caip2: `eip155:${chainId}`,
  rpcUrl: 'http://127.0.0.1:1',
  creditContract: addr(1),
  identityRegistry: addr(2),
  reputationRegistry: addr(3),
  tokens: [
    { symbol: 'USDC', address: addr(10 + chainId), decimals: 6, eip712Name: 'USD Coin', eip712Version: '2' },
    { symbol: 'EURC', address: addr(20 + chainId), decimals: 6, eip712Name: 'Euro Coin', eip712Version: '2' },
  ],
  x402SelfFacilitate: selfFacilitate,
  confirmations: 1,
})
const networks = parseNetworksConfig({ networks: [entry('net-a', 1, false), entry('net-b', 2, true)] }, {})
const payee = '0x00000000000000000000000000000000000000aA'

t.test('embedded devnet: on by default, priced on the self-facilitated network, paid to the devnet score payee', async (t) => {
  const s = resolveCreditScore(undefined, networks, { devnetPayee: payee })
  t.ok(s)
  t.equal(s?.network.slug, 'net-b')
  t.equal(s?.token.symbol, 'USDC')
  t.equal(s?.priceAtomic, DEVNET_PRICE_ATOMIC)
  t.equal(s?.payTo, '0x00000000000000000000000000000000000000AA', 'checksummed')
  t.equal(s?.maxTimeoutSeconds, MAX_TIMEOUT_SECONDS_DEFAULT)
  t.equal(resolveCreditScore({ enabled: false }, networks, { devnetPayee: payee }), null, 'turned off')
  t.equal(resolveCreditScore({ enabled: true, asset: 'EURC', priceAtomic: '7' }, networks, { devnetPayee: payee })?.token.symbol, 'EURC')
})

t.test('networks file: off unless configured; enabling it names network, price and payee', async (t) => {
  t.equal(resolveCreditScore(undefined, networks, {}), null, 'off by default')
  t.throws(() => resolveCreditScore({ enabled: true }, networks, {}), ConfigError, 'no network')
  t.throws(() => resolveCreditScore({ enabled: true, network: 'net-a', payTo: payee }, networks, {}), ConfigError, 'no price')
  t.throws(() => resolveCreditScore({ enabled: true, network: 'net-a', priceAtomic: '5' }, networks, {}), ConfigError, 'no payee')
  t.throws(() => resolveCreditScore({ network: 'nowhere', priceAtomic: '5', payTo: payee }, networks, {}), ConfigError, 'unknown network')
  t.throws(() => resolveCreditScore({ network: 'net-a', asset: 'DAI', priceAtomic: '5', payTo: payee }, networks, {}), ConfigError, 'unknown asset')
  const s = resolveCreditScore({ network: 'net-a', priceAtomic: '5', payTo: payee, facilitatorUrl: 'https://facilitator.example' }, networks, {})
  t.match(s, { network: { slug: 'net-a' }, priceAtomic: 5n, facilitatorUrl: 'https://facilitator.example' }, 'a creditScore section turns it on')
})

t.test('CREDIT_SCORE=on|off wins over creditScore.enabled of the config file; anything else is refused', async (t) => {
  t.equal(loadServiceConfig({}).creditScore, undefined, 'nothing said: the mode decides')
  t.same(loadServiceConfig({ CREDIT_SCORE: 'off' }).creditScore, { enabled: false })
  t.same(loadServiceConfig({ CREDIT_SCORE: 'on' }).creditScore, { enabled: true })
  t.throws(() => loadServiceConfig({ CREDIT_SCORE: 'yes' }), ConfigError)
})

t.test('a lender\'s reputation moves by a whole step at the principal the score counts a repayment at, per network and asset', async (t) => {
  const eighteen = { ...entry('net-c', 3, false), tokens: entry('net-c', 3, false).tokens.map((token) => ({ ...token, decimals: 18 })) }
  t.same(lenderReputationFullStepOf(networks), { 'net-a': { USDC: 100_000_000n, EURC: 100_000_000n }, 'net-b': { USDC: 100_000_000n, EURC: 100_000_000n } }, '100 whole units of each 6-decimal token')
  t.same(lenderReputationFullStepOf(parseNetworksConfig({ networks: [eighteen] }, {})), { 'net-c': { USDC: 100n * 10n ** 18n, EURC: 100n * 10n ** 18n } }, 'and of an 18-decimal one')
  t.equal(SCORE_TERMS.repaymentMinPrincipalUnits, 100)
  for (const m of repaymentMinimumsOf(networks)) t.equal(lenderReputationFullStepOf(networks)[m.network]?.[m.asset], m.minPrincipalAtomic, `${m.asset} on ${m.network}: the score's minimum`)
})
