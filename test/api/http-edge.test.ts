// The HTTP edge of the whole service, over real HTTP against the devnet: HEAD on every GET route, the discovery
// documents cached and compressed, lists paged with Link and cheap (cost-counted, small wallet pages), empty action
// bodies, malformed times, duplicate keys and unbounded liquidity refused, idempotency answers that expire, and a
// flood that spends one client's tokens without locking out a signed-in wallet on the same address.
import { gunzipSync } from 'node:zlib'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { parseResponse, rawExchange, rawUntil, responseEnded } from '../http/fixtures/raw.ts'
import { signedIn, startHarness, USDC, type Harness } from '../fixtures/service.ts'
import { expectProblem, type Json } from './fixtures/api.ts'

let offsetMs = 0
/** Holds the service's clock still (the rate limit's buckets refill by it) while a test looks at what a burst left. */
let heldAtMs: number | undefined
let h: Harness
let doc: Json
let lenders: CreditClient[] = []
t.before(async () => {
  h = await startHarness({ clock: () => (heldAtMs ?? Date.now()) + offsetMs, config: { idempotencyRetentionSeconds: 60 } })
  doc = (await new CreditClient(h.url).get('/openapi.json')).body
  // 25 lenders (registration needs no funds): enough for several pages.
  lenders = await Promise.all(Array.from({ length: 25 }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  for (const client of lenders) {
    const reply = await client.post('/lenders/register', registration('1000000'))
    if (reply.status !== 201) throw new Error(JSON.stringify(reply.body))
  }
})
t.teardown(async () => {
  await h.stop()
})

function registration(availableLiquidityAtomic: string) {
  return { availableLiquidityAtomic, asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A', 'B', 'C'] }
}

/** What came holds `count` status lines, the last of its answers whole (the first, a HEAD's, announces a length it has not). */
const answersEnded = (count: number) => (text: string) => (text.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0) >= count && responseEnded(text.slice(text.lastIndexOf('HTTP/1.1 ')))

/**
 * A HEAD with a GET pipelined behind it: anything the HEAD's answer carried after its head comes before the second
 * answer's status line, so no time is spent waiting for a body that should not come.
 */
const head = async (path: string) => {
  const { text } = await rawUntil(h.app.server.port, [`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\nGET /.well-known/service.json HTTP/1.1\r\nHost: x\r\n\r\n`], answersEnded(2))
  const headEnd = text.indexOf('\r\n\r\n') + 4
  return { response: parseResponse(text.slice(0, headEnd)), bodyBytes: text.indexOf('HTTP/1.1 ', headEnd) - headEnd }
}

t.test('HEAD answers every GET route of the document with the GET\'s status and length, and no body', async (t) => {
  const concrete: Record<string, string> = { '{jobId}': 'job_none', '{offerId}': 'off_1', '{advanceId}': 'adv_1', '{address}': lenders[0]!.address as string }
  const gets = Object.entries(doc['paths'] as Record<string, Json>).filter(([, item]) => item['get'] !== undefined).map(([path]) => path)
  t.ok(gets.length >= 14, `${gets.length} GET routes`)
  for (const template of gets) {
    const path = template.replace(/\{[A-Za-z]+\}/g, (name) => concrete[name] as string)
    const get = await fetch(h.url + path, { headers: { 'accept-encoding': 'identity' } })
    const getBody = await get.text()
    const { response, bodyBytes } = await head(path)
    t.equal(response.status, get.status, `HEAD ${path}: status ${get.status}`)
    t.equal(bodyBytes, 0, `HEAD ${path}: no body`)
    // The nonce differs per call, the wallet balances may move; the length of the others is the GET's.
    if (!['/auth/nonce', '/health'].includes(path) && !path.includes('wallet')) t.equal(Number(response.headers['content-length']), Buffer.byteLength(getBody), `HEAD ${path}: content-length of the GET`)
  }
})

t.test('the discovery documents: strong ETag, Cache-Control, 304, gzip, and ?v=1 ignored', async (t) => {
  for (const path of ['/openapi.json', '/.well-known/service.json', '/llms.txt']) {
    const plain = await fetch(`${h.url}${path}?v=1`, { headers: { 'accept-encoding': 'identity' } })
    t.equal(plain.status, 200, `${path}?v=1 is served`)
    const text = await plain.text()
    const etag = plain.headers.get('etag') ?? ''
    t.match(etag, /^"[A-Za-z0-9_-]{20,}"$/, `${path}: strong ETag`)
    t.equal(plain.headers.get('cache-control'), 'public, max-age=300')
    const again = await fetch(`${h.url}${path}`, { headers: { 'accept-encoding': 'identity', 'if-none-match': etag } })
    t.equal(again.status, 304, `${path}: 304 on If-None-Match`)
    t.equal(await again.text(), '')
    const { text: raw } = await rawExchange(h.app.server.port, [`GET ${path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n`], 0, responseEnded)
    const gz = parseResponse(raw)
    t.equal(gz.headers['content-encoding'], 'gzip', `${path}: gzip when accepted`)
    const body = Buffer.from(raw.slice(raw.indexOf('\r\n\r\n') + 4), 'latin1')
    t.equal(gunzipSync(body).toString('utf8'), text, `${path}: the gzip body is the document`)
    t.ok(body.length < Buffer.byteLength(text) / 2, `${path}: ${body.length} of ${Buffer.byteLength(text)} bytes`)
  }
  await expectProblem(t, await new CreditClient(h.url).get('/credit/state?v=1'), 400, 'validation_failed', 'an API route still refuses an unknown parameter')
})

t.test('lists: integer limits with their real bounds, Link rel="next" beside next-after, small wallet pages', async (t) => {
  const client = new CreditClient(h.url)
  const first = await client.get('/lenders/wallets')
  t.equal(first.status, 200)
  t.equal(first.body.length, 20, 'the wallet list defaults to pages of 20')
  const after = first.headers.get('next-after')
  t.equal(first.headers.get('link'), `</lenders/wallets?limit=20&after=${after}>; rel="next"`)
  const all = await client.list('/lenders/wallets?limit=7')
  t.equal(all.body.length, 25, 'following Link reaches every lender')
  t.equal(new Set(all.body.map((w: Json) => w['lender'])).size, 25, 'each once')
  const last = await client.get('/lenders?limit=10&after=20')
  t.same(last.body.map((l: Json) => l['registrationSeq']), [21, 22, 23, 24, 25])
  t.equal(last.headers.get('link'), null, 'no Link on the last page')
  for (const [path, max] of [['/lenders', 1000], ['/credit/backing-sources', 1000], ['/lenders/wallets', 200]] as const) {
    t.equal((await client.get(`${path}?limit=${max}`)).status, 200, `${path}?limit=${max}`)
    const over = await client.get(`${path}?limit=${max + 1}`)
    expectProblem(t, over, 400, 'validation_failed', `${path}?limit=${max + 1} is refused, not clamped`)
    t.equal((await client.get(`${path}?limit=9999`)).status, 400)
  }
  t.match(doc['paths']['/lenders/wallets']['get']['parameters'], [{ name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 200, default: 20 } }, { name: 'after', schema: { type: 'integer', minimum: 0 } }])
})

t.test('actions whose body is optional take an empty POST', async (t) => {
  const client = lenders[0]!
  const none = await fetch(`${h.url}/credit/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${client.token}` } })
  t.equal(none.status, 200, 'dispatch without a body')
  t.match(await none.json(), { expiredLeases: [], expiredOffers: [], matches: [] })
  const empty = await fetch(`${h.url}/credit/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${client.token}`, 'content-type': 'application/json' }, body: '' })
  t.equal(empty.status, 200, 'dispatch with an empty JSON body')
  // complete and liquidate reach their handler: the unknown ids are theirs to refuse.
  const complete = await fetch(`${h.url}/credit/jobs/job_none/complete`, { method: 'POST', headers: { authorization: `Bearer ${client.token}` } })
  t.equal((await complete.json() as Json)['code'], 'job_not_found')
  const liquidate = await fetch(`${h.url}/credit/advances/adv_999/liquidate`, { method: 'POST', headers: { authorization: `Bearer ${client.token}` } })
  t.equal((await liquidate.json() as Json)['code'], 'advance_not_found')
  t.equal(doc['paths']['/credit/dispatch']['post']['requestBody']['required'], false, 'the document says the body is optional')
  t.equal(doc['paths']['/credit/jobs/{jobId}/fail']['post']['requestBody']['required'], true, 'fail still needs its reason')
})

t.test('malformed input: a leap second, a key given twice, liquidity beyond 2^128-1; nothing changes', async (t) => {
  const client = lenders[1]!
  const before = (await client.get('/credit/state')).body
  const job = { jobId: 'job_leap', network: h.network.slug, asset: USDC, agent: client.address, receivableAtomic: '1000', fundingTxHash: `0x${'ab'.repeat(32)}` }
  for (const dueAt of ['2026-12-31T23:59:60Z', '2026-06-30T23:59:60+00:00', '2026-02-30T00:00:00Z', '2026-13-01T00:00:00Z', 'tomorrow']) {
    const reply = await client.post('/credit/jobs', { ...job, dueAt })
    const problem = expectProblem(t, reply, 400, 'validation_failed', `dueAt ${dueAt}`)
    t.same(problem['errors'].map((e: Json) => e['path']), ['/body/dueAt'])
  }
  const twice = await client.call('POST', '/credit/jobs', undefined, { raw: `{"jobId":"job_a","jobId":"job_b","network":"${h.network.slug}","asset":"USDC","agent":"${client.address}","receivableAtomic":"1","dueAt":"2030-01-01T00:00:00Z","fundingTxHash":"0x${'ab'.repeat(32)}"}` })
  expectProblem(t, twice, 400, 'duplicate_json_key', 'a key given twice')
  t.same(twice.body['errors'], [{ path: '/body/jobId', message: 'duplicate key' }])

  const whale = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const over = await whale.post('/lenders/register', registration((1n << 128n).toString()))
  expectProblem(t, over, 400, 'validation_failed', '2^128 of liquidity')
  t.same(over.body['errors'], [{ path: '/body/availableLiquidityAtomic', message: 'must be at most 2^128-1' }])
  t.same((await client.get('/credit/state')).body, before, 'nothing changed')
  const max = ((1n << 128n) - 1n).toString()
  t.equal((await whale.post('/lenders/register', registration(max))).status, 201, '2^128-1 is accepted')
  const other = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  t.equal((await other.post('/lenders/register', registration(max))).status, 201)
  // Responses are checked against their schemas here: totals beyond 2^256-1 would be a 500.
  const state = await client.get('/credit/state')
  t.equal(state.status, 200, 'the totals stay within the Atomic schema')
  t.equal(state.body['totals']['registeredAtomic'], (BigInt(before['totals']['registeredAtomic']) + 2n * ((1n << 128n) - 1n)).toString())
})

t.test('idempotency answers are replayed for the retention, then the key runs again', async (t) => {
  // A request that changes something (a request that changes nothing stores no answer:
  // test/api/adversary6-idempotency-storage.test.ts).
  const client = lenders[2]!
  const withdraw = () => client.post(`/lenders/${client.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: 'withdraw-1' })
  const first = await withdraw()
  t.equal(first.status, 200, JSON.stringify(first.body))
  t.equal(first.headers.get('idempotent-replayed'), null)
  const replay = await withdraw()
  t.equal(replay.headers.get('idempotent-replayed'), 'true', 'a retry within the retention is the stored answer')
  offsetMs += 60_000
  const later = await withdraw()
  t.equal(later.status, 200)
  t.equal(later.headers.get('idempotent-replayed'), null, 'after the retention (60 s here) the key is free again')
  t.equal(later.body.lender.withdrawnAtomic, '2', 'and ran again')
  t.equal((await client.get('/.well-known/service.json')).body['limits']['idempotencyRetentionSeconds'], 60, 'the catalog names the retention')
})

t.test('a flood of heavy pages spends its client\'s tokens; a signed-in wallet on the same address goes on', async (t) => {
  // One token a second, a burst of 2: a page of 25 wallets costs 25.
  // The chain follower commits idle chain time at most once a minute here, and its catch-up after the restart is
  // durable before the flood: a read waits for the commits queued before it, and pipelined answers must stay in order.
  await h.restart({ rateLimitPerSecond: 1, chainTimeIntervalMs: 60_000 })
  const follower = h.app.service.followers.get(h.network.slug)!
  while (follower.cursor === undefined || follower.status().state !== 'ok') await new Promise((resolve) => setTimeout(resolve, 20))
  await h.app.service.store.durable()
  const requests = Array.from({ length: 30 }, () => 'GET /lenders/wallets?limit=200 HTTP/1.1\r\nHost: x\r\n\r\n').join('')
  // No token comes back while the answers are checked, however long a loaded machine takes to give them.
  heldAtMs = Date.now()
  t.teardown(() => { heldAtMs = undefined })
  const { text } = await rawExchange(h.app.server.port, [requests], 0, answersEnded(30))
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
  t.equal(statuses.length, 30, 'every pipelined request answered')
  const served = statuses.filter((s) => s === 200).length
  t.ok(served >= 1 && served <= 2, `at most the burst is served (${served}); each page then costs its 25 items`)
  t.equal(statuses.filter((s) => s === 429).length, 30 - served, 'the rest are refused before any page is built')
  t.match(text, /ratelimit: "client";r=0;t=\d+/, 'the answers say the bucket is empty')
  t.equal((await fetch(`${h.url}/health`)).status, 429, 'the address is spent for anonymous calls (a NAT: sign in, or use a trusted proxy)')
  const wallet = await fetch(`${h.url}/credit/dispatch`, { method: 'POST', headers: { authorization: `Bearer ${lenders[3]!.token}` } })
  t.equal(wallet.status, 200, 'a signed-in wallet behind the same address is counted on its own bucket')
  t.equal(wallet.headers.get('ratelimit-policy'), '"wallet";q=2;w=2')
})
