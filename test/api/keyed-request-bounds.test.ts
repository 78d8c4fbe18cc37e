// What a free wallet can make the store keep with Idempotency-Keys is bounded: the first request with a key may store
// its answer for idempotencyRetentionSeconds (a day), and an unfunded lender registered with 2^128-1 of liquidity can
// withdraw 1 unit without end (nothing moves on chain). First requests with a key are counted per wallet
// (keyedRequestsPerWalletPerHour, default 1,800, a bucket of an hour's worth), per client address
// (keyedRequestsPerClientPerHour) and for all callers (keyedRequestsPerHour): past one, 429 idempotency_keys_limited
// (the caller's own) or 503 idempotency_keys_exhausted (all callers'), with Retry-After; nothing runs, nothing is
// stored, and the same request with the same key succeeds later. A replay costs nothing; a request without a key is
// not counted. Real service behind a trusted proxy (X-Forwarded-For names the client) and anvil; the service's clock
// is moved by the test.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { serviceDefaults, type ServiceConfig } from '../../src/app/config.ts'
import type { Reply } from '../../src/client/client.ts'
import { AgentCredit } from '../../src/client/sdk.ts'
import { readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectProblem, lenderThatLent } from './fixtures/api.ts'

interface Lender {
  token: string
  path: string
  liquidity: () => bigint
}

/** A fresh wallet registered as a lender with 2^128-1 of liquidity, never funded. */
async function unfundedLender(h: Harness): Promise<Lender> {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  const reply = await client.post('/lenders/register', { availableLiquidityAtomic: ((1n << 128n) - 1n).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A'] })
  if (reply.status !== 201) throw new Error(`register: ${reply.status}`)
  return {
    token: client.token as string,
    path: `/lenders/${account.address}/withdraw`,
    liquidity: () => h.app.service.engine.getLender(account.address)?.policyAvailableAtomic as bigint,
  }
}

async function withdraw(h: Harness, lender: Lender, key: string | undefined, from = '203.0.113.9'): Promise<Reply> {
  const response = await fetch(`${h.url}${lender.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${lender.token}`, 'content-type': 'application/json', 'x-forwarded-for': from, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify({ amountAtomic: '1' }),
  })
  return { status: response.status, headers: response.headers, body: await response.json() }
}

async function withStill(config: Partial<ServiceConfig>): Promise<{ h: Harness; advance: (ms: number) => void }> {
  let nowMs = Date.now()
  const h = await startHarness({ clock: () => nowMs, config: { trustedProxies: ['127.0.0.1'], ...config } })
  return { h, advance: (ms) => void (nowMs += ms) }
}

const defaults = {
  keyedRequestsPerWalletPerHour: serviceDefaults.keyedRequestsPerWalletPerHour,
  keyedRequestsPerClientPerHour: serviceDefaults.keyedRequestsPerClientPerHour,
  keyedRequestsPerHour: serviceDefaults.keyedRequestsPerHour,
}

t.test('one wallet stores keyedRequestsPerWalletPerHour answers (default 1,800) at once, then 429 idempotency_keys_limited', async (t) => {
  const { h, advance } = await withStill(defaults)
  t.teardown(() => h.stop())
  t.equal(serviceDefaults.keyedRequestsPerWalletPerHour, 1800)
  const lender = await unfundedLender(h)
  const before = lender.liquidity()
  for (let i = 0; i < 1800; i++) {
    const reply = await withdraw(h, lender, `w-${i}`)
    if (reply.status !== 200) t.fail(`withdrawal ${i}: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
  t.equal(before - lender.liquidity(), 1800n)
  const replay = await withdraw(h, lender, 'w-0')
  t.equal(replay.status, 200, 'a replay is answered: it stores nothing new')
  t.equal(replay.headers.get('idempotent-replayed'), 'true')
  const refused = await withdraw(h, lender, 'w-1800')
  expectProblem(t, refused, 429, 'idempotency_keys_limited', 'the 1,801st key')
  t.equal(refused.headers.get('retry-after'), '2', 'one token back every 2 s (1,800 an hour)')
  t.equal(before - lender.liquidity(), 1800n, 'the refused withdrawal changed nothing')
  t.equal((await withdraw(h, lender, undefined)).status, 200, 'without a key the request runs: nothing is stored for it')
  t.equal((await withdraw(h, lender, 'w-1800', '198.51.100.1')).status, 429, 'from another client address too: the bound is the wallet\'s')
  advance(2000)
  t.equal((await withdraw(h, lender, 'w-1800')).status, 200, 'the same request, once the wait is over, runs')
  t.equal(before - lender.liquidity(), 1802n)
  // The budgets are published: the catalog's limits, llms.txt, and the charged operations' 429 and 503.
  const catalog = (await (await fetch(`${h.url}/.well-known/service.json`)).json()) as { limits: Record<string, number> }
  t.match(catalog.limits, { keyedRequestsPerWalletPerHour: 1800, keyedRequestsPerClientPerHour: 7200, keyedRequestsPerHour: 360_000 }, 'the catalog\'s limits')
  t.match(await (await fetch(`${h.url}/llms.txt`)).text(), /1800 an hour per wallet, 7200 an hour per client address \(429 idempotency_keys_limited beyond\), 360000 an hour from all callers \(503 idempotency_keys_exhausted beyond[;)]/, 'llms.txt')
  const responses = ((await (await fetch(`${h.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> }).paths['/lenders/{address}/withdraw']?.['post']?.responses
  t.match(responses?.['429']?.description, /idempotency_keys_limited.*keyedRequestsPerWalletPerHour/, 'the withdrawal\'s 429')
  t.match(responses?.['503']?.description, /idempotency_keys_exhausted.*keyedRequestsPerHour/, 'and 503')
})

t.test('one client address sends keyedRequestsPerClientPerHour keyed requests, whatever its wallets; 429 idempotency_keys_limited', async (t) => {
  // 7,200 an hour per wallet stands in for no wallet bound; 4 an hour per client: a bucket of 4, one back in 15 min.
  const { h } = await withStill({ ...defaults, keyedRequestsPerWalletPerHour: 7200, keyedRequestsPerClientPerHour: 4 })
  t.teardown(() => h.stop())
  const first = await unfundedLender(h)
  const second = await unfundedLender(h)
  for (let i = 0; i < 2; i++) t.equal((await withdraw(h, first, `a-${i}`)).status, 200)
  for (let i = 0; i < 2; i++) t.equal((await withdraw(h, second, `b-${i}`)).status, 200)
  const refused = await withdraw(h, second, 'b-2')
  expectProblem(t, refused, 429, 'idempotency_keys_limited', 'the client\'s fifth key, from a new wallet of it')
  t.equal(refused.headers.get('retry-after'), '900')
  t.equal((await withdraw(h, second, 'b-2', '198.51.100.1')).status, 200, 'the same wallet from another client address runs')
})

t.test('all callers send keyedRequestsPerHour keyed requests (a minute\'s worth at once), then 503 idempotency_keys_exhausted', async (t) => {
  // 180 an hour: a bucket of 3, one back every 20 s.
  const { h } = await withStill({ ...defaults, keyedRequestsPerHour: 180 })
  t.teardown(() => h.stop())
  const lender = await unfundedLender(h)
  const before = lender.liquidity()
  for (let i = 0; i < 3; i++) t.equal((await withdraw(h, lender, `k-${i}`, `203.0.113.${i + 1}`)).status, 200)
  const refused = await withdraw(h, lender, 'k-3', '203.0.113.4')
  expectProblem(t, refused, 503, 'idempotency_keys_exhausted', 'a fourth client\'s key, past every caller\'s bound')
  t.equal(refused.headers.get('retry-after'), '20')
  t.equal(before - lender.liquidity(), 3n, 'the refused withdrawal changed nothing')
})

t.test('strangers holding all callers\' keyed requests exhausted do not refuse a funded lender\'s keyed withdrawal; a stranger stays refused', async (t) => {
  // The finding: ~50 IPv6 /64s with fresh keys hold keyedRequestsPerHour's bucket empty, and an honest lender's keyed
  // withdrawal through the SDK failed 503 (its three attempts). 180 an hour: a bucket of 3, a frozen clock.
  const { h } = await withStill({ ...defaults, keyedRequestsPerHour: 180 })
  t.teardown(() => h.stop())
  // Standing: the lender has paid a lease (a funded wallet alone is none: outsider13's finding).
  const funded = await lenderThatLent(h, await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(10) }), 'job_keyed_bounds_standing')
  const stranger = await unfundedLender(h)
  let flooded = false
  for (let i = 0; i < 10 && !flooded; i++) flooded = (await withdraw(h, stranger, `s-${i}`, `2001:db8:${i}::1`)).status === 503
  t.ok(flooded, 'the strangers emptied all callers\' bucket')
  expectProblem(t, await withdraw(h, stranger, 's-new', '2001:db8:ff::1'), 503, 'idempotency_keys_exhausted', 'a wallet without standing is refused: what strangers make the store keep stays bounded')
  const lender = new AgentCredit({ baseUrl: h.url, account: funded.account, attempts: 1 })
  const profile = await lender.withdraw(1n)
  t.ok(BigInt(profile.lender.policyAvailableAtomic) > 0n, 'the lender\'s keyed withdrawal (the SDK keys every POST) runs, on its own buckets')
  const keyed = await lender.reply('POST', `/lenders/${funded.account.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: 'honest-1' })
  t.equal(keyed.status, 200)
  t.equal((keyed.body as { lender: { policyAvailableAtomic: string } }).lender.policyAvailableAtomic, (BigInt(profile.lender.policyAvailableAtomic) - 1n).toString(), 'and a keyed one withdraws')
  const replay = await lender.reply('POST', `/lenders/${funded.account.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: 'honest-1' })
  t.equal(replay.headers.get('idempotent-replayed'), 'true', 'its answer was stored: a retry withdraws nothing twice')
  expectProblem(t, await withdraw(h, stranger, 's-new', '2001:db8:fe::1'), 503, 'idempotency_keys_exhausted', 'the stranger is still refused')
})

t.test('the credit path is not charged: an agent keys each of its POSTs (the SDK does), and their runs are bounded elsewhere', async (t) => {
  const { h } = await withStill({ keyedRequestsPerWalletPerHour: 2, keyedRequestsPerClientPerHour: 1000, keyedRequestsPerHour: 1000 })
  t.teardown(() => h.stop())
  const lender = await unfundedLender(h)
  // Five keyed dispatches of the lender's wallet: the credit path, each with a fresh key, none refused.
  for (let i = 0; i < 5; i++) {
    const response = await fetch(`${h.url}/credit/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lender.token}`, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9', 'idempotency-key': `dispatch-${i}` },
      body: '{}',
    })
    t.equal(response.status, 200, `keyed dispatch ${i + 1}`)
  }
  // The same wallet's withdrawals are charged: two, then the wallet's bound.
  t.equal((await withdraw(h, lender, 'w-1')).status, 200)
  t.equal((await withdraw(h, lender, 'w-2')).status, 200)
  expectProblem(t, await withdraw(h, lender, 'w-3'), 429, 'idempotency_keys_limited')
  // Each route declares whether it is charged, and the OpenAPI document says so on every operation that takes a key.
  const paths = ((await (await fetch(`${h.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: Array<{ $ref?: string }>; 'x-keyed-requests-charged'?: boolean }>> }).paths
  const charged = Object.entries(paths).flatMap(([path, item]) => Object.entries(item).filter(([, op]) => op.parameters?.some((p) => p.$ref === '#/components/parameters/IdempotencyKey')).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op['x-keyed-requests-charged']] as const))
  t.ok(charged.length > 10, `${charged.length} operations take an Idempotency-Key`)
  for (const [operation, isCharged] of charged) t.equal(isCharged, !operation.startsWith('POST /credit/'), `${operation}: x-keyed-requests-charged ${String(isCharged)}`)
})
