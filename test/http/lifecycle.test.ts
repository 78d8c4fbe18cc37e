// Rate limiting, start-up checks of the route table, and graceful shutdown.
import t from 'tap'
import Type from 'typebox'
import { Strict, StrictObject } from '../../src/api/common.ts'
import { clientAddress } from '../../src/http/client-key.ts'
import { HttpProblem } from '../../src/http/problem.ts'
import { RateLimiter, StoreBudget, type BudgetProblems } from '../../src/http/rate-limit.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { silentLogger } from '../../src/http/log.ts'
import { startTestServer, testRoutes, testTransport } from './fixtures/routes.ts'

t.test('429 with Retry-After once a client spent its bucket; tokens come back with time', async (t) => {
  let now = 1_000_000
  const { server } = await startTestServer({ rateLimit: { burst: 3, refillPerSecond: 0.5 }, nowMs: () => now })
  t.teardown(() => server.close(1000))
  for (let i = 0; i < 3; i++) t.equal((await fetch(`${server.url}/items/a`)).status, 200, `request ${i + 1} within the burst`)
  const limited = await fetch(`${server.url}/items/a`)
  t.equal(limited.status, 429)
  t.equal(limited.headers.get('retry-after'), '2', 'one token takes 2 s at 0.5 tokens/s')
  t.equal(limited.headers.get('content-type'), 'application/problem+json')
  t.equal(((await limited.json()) as { code: string }).code, 'rate_limited')
  t.equal((await fetch(`${server.url}/nope`)).status, 429, 'unknown routes spend the same bucket')
  now += 2000
  t.equal((await fetch(`${server.url}/items/a`)).status, 200, 'a token refilled after Retry-After')
})

t.test('the token bucket bounds its memory and its burst', async (t) => {
  const limiter = new RateLimiter({ burst: 2, refillPerSecond: 1, bucketsMax: 3 })
  for (const client of ['a', 'b', 'c', 'd', 'e']) t.match(limiter.take(client, 0), { allowed: true, remaining: 1 })
  t.equal(limiter.size, 3, 'only the most recent clients are kept')
  t.same(limiter.take('e', 0), { allowed: true, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1 })
  t.same(limiter.take('e', 0), { allowed: false, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1 })
  t.match(limiter.take('e', 60_000), { allowed: true, remaining: 1 }, 'refilled')
  t.match(limiter.take('e', 60_000), { allowed: true, remaining: 0 }, 'burst capped at 2 after a long idle')
  t.match(limiter.take('e', 60_000), { allowed: false, retryAfterSeconds: 1 })
})

t.test('an answer charged after the fact leaves a debt that later requests wait out', async (t) => {
  const limiter = new RateLimiter({ burst: 10, refillPerSecond: 2 })
  t.match(limiter.take('a', 0), { allowed: true, remaining: 9 })
  t.same(limiter.charge('a', 0, 14), { allowed: true, remaining: 0, resetSeconds: 8, retryAfterSeconds: 3 }, '-5 tokens: 3 s until one is back')
  t.match(limiter.take('a', 2_000), { allowed: false, retryAfterSeconds: 1 }, 'still in debt after 2 s')
  t.match(limiter.take('a', 3_000), { allowed: true, remaining: 0 })
  t.throws(() => limiter.charge('a', 3_000, -1), RangeError)
})

t.test('a store budget charges the wallet, the client, then all callers; a refusal spends nothing of the buckets after it', async (t) => {
  let nowMs = 0
  // 2 an hour for a wallet and a client (a bucket of 2), 180 an hour for all (a bucket of 3, a minute's worth).
  const budget = new StoreBudget({ wallet: 2, client: 2, all: 180 }, () => nowMs)
  const problems: BudgetProblems = {
    limited: (bucket, retryAfterSeconds) => new HttpProblem(429, 'limited', bucket, { headers: { 'retry-after': String(retryAfterSeconds) } }),
    exhausted: (retryAfterSeconds) => new HttpProblem(503, 'exhausted', 'all', { headers: { 'retry-after': String(retryAfterSeconds) } }),
  }
  const asked: string[] = []
  const charge = (wallet: string | undefined, client: string, standing?: boolean) => {
    try {
      const shared = budget.charge(wallet, client, problems, standing === undefined ? undefined : () => (asked.push(`${wallet}`), standing))
      return shared ? 'charged' : 'charged on its own buckets'
    } catch (error) {
      const problem = error as HttpProblem
      return `${problem.status} ${problem.detail} ${problem.headers?.['retry-after']}`
    }
  }
  t.equal(charge('w1', 'c1'), 'charged')
  t.equal(charge('w1', 'c2'), 'charged')
  t.equal(charge('w1', 'c3'), '429 wallet 1800', 'the wallet\'s third: a token back in half an hour')
  t.equal(charge('w2', 'c3'), 'charged', 'the wallet\'s refusal spent nothing of c3\'s bucket nor of all callers\' last token')
  t.equal(charge('w3', 'c4'), '503 all 20', 'all callers\' three are spent: one back in 20 s')
  nowMs = 20_000
  t.equal(charge(undefined, 'c1'), 'charged', 'without a wallet, the client and all callers are charged')
  t.equal(charge(undefined, 'c1'), '429 client 1780', 'c1\'s third: its own bound answers, before all callers\' (empty too) is asked')
  t.equal(new StoreBudget({ wallet: 0, client: 0, all: 0 }, () => 0).charge('w', 'c', problems), true, '0 is off')
  // All callers' bucket is empty: a wallet with standing is admitted on its own buckets, which it spends; one without is not.
  t.equal(charge('w4', 'c5', false), '503 all 20', 'a stranger is refused')
  t.equal(charge('w4', 'c5', true), 'charged on its own buckets', 'a wallet with standing is admitted past all callers\' empty bucket')
  t.equal(charge('w4', 'c5', true), 'charged on its own buckets')
  t.equal(charge('w4', 'c6', true), '429 wallet 1800', 'its own buckets were spent: its wallet\'s bound still holds')
  t.same(asked, ['w4', 'w4', 'w4'], 'standing is asked only when all callers\' bucket refuses')
  nowMs += 20_000
  t.equal(charge('w5', 'c7', true), 'charged', 'with a token in all callers\' bucket, standing is not asked')
  t.same(asked, ['w4', 'w4', 'w4'])
})

t.test('a caller a store budget refuses keeps its own tokens: strangers holding all callers\' bucket empty cost it nothing', async (t) => {
  // An outsider's finding: the buckets before the refusing one kept the token they gave, so an honest agent that
  // retried its sign-in while strangers with a few addresses held all callers' bucket empty spent its own client's
  // bucket on 503s, and was refused 429 on its own bound after the strangers stopped.
  let nowMs = 0
  // 2 an hour for a wallet and a client (a bucket of 2), 180 an hour for all (a bucket of 3, a minute's worth).
  const budget = new StoreBudget({ wallet: 2, client: 2, all: 180 }, () => nowMs)
  const problems: BudgetProblems = {
    limited: (bucket) => new HttpProblem(429, 'limited', bucket),
    exhausted: () => new HttpProblem(503, 'exhausted', 'all'),
  }
  const asked: string[] = []
  const charge = (wallet: string | undefined, client: string, standing?: boolean) => {
    try {
      const shared = budget.charge(wallet, client, problems, standing === undefined ? undefined : () => (asked.push(`${wallet}`), standing))
      return shared ? 'charged' : 'charged on its own buckets'
    } catch (error) {
      return `${(error as HttpProblem).status} ${(error as HttpProblem).detail}`
    }
  }
  for (const stranger of ['s1', 's2', 's3']) t.equal(charge(stranger, stranger), 'charged', 'strangers, an address each, spend all callers\' bucket')
  for (let retry = 0; retry < 4; retry++) t.equal(charge('honest', 'honest-client'), '503 all', 'the honest caller is refused while it is empty')
  t.equal(charge(undefined, 'honest-client'), '503 all', 'a sign-in (no wallet) too')
  nowMs = 60_000
  t.equal(charge('honest', 'honest-client'), 'charged', 'all callers\' bucket refilled: the honest wallet and client still hold their two')
  t.equal(charge('honest', 'honest-client'), 'charged')
  t.equal(charge('honest', 'honest-client'), '429 wallet', 'then its own bound')
  // A client's refusal gives the wallet's token back too.
  nowMs = 120_000
  t.equal(charge('w5', 'c5'), 'charged')
  t.equal(charge('w6', 'c5'), 'charged')
  t.equal(charge('w7', 'c5'), '429 client', 'c5 spent')
  nowMs = 180_000
  t.equal(charge('w7', 'c6'), 'charged', 'w7 from another address: its wallet kept both tokens')
  t.equal(charge('w7', 'c6'), 'charged')
})

t.test('a trusted proxy names the client; anyone else cannot', async (t) => {
  const proxies = new Set(['10.0.0.1', '10.0.0.2'])
  t.equal(clientAddress('10.0.0.1', '203.0.113.7', proxies), '203.0.113.7', 'the proxy forwards the client')
  t.equal(clientAddress('10.0.0.1', '198.51.100.1, 203.0.113.7', proxies), '203.0.113.7', 'a value the client sent itself is left of what the proxy appended')
  t.equal(clientAddress('10.0.0.2', '203.0.113.7, 10.0.0.1', proxies), '203.0.113.7', 'a chain of trusted proxies is walked from the right')
  t.equal(clientAddress('192.0.2.9', '203.0.113.7', proxies), '192.0.2.9', 'an untrusted peer cannot choose its bucket')
  t.equal(clientAddress('10.0.0.1', '', proxies), '10.0.0.1')
  t.equal(clientAddress('10.0.0.1', '203.0.113.7', new Set()), '10.0.0.1', 'no trusted proxy: the header is ignored')
})

t.test('the route table refuses open objects, mismatched params and duplicates at start-up', async (t) => {
  const base = { method: 'post' as const, operationId: 'x', callers: 'any caller (a test route)', summary: 'x', auth: 'none' as const, responses: { 200: { description: 'ok' } }, handler: () => ({ status: 200 as const, body: undefined }) }
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x', body: Type.Object({ a: Type.String() }) })] }), /open objects at #/)
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x', body: StrictObject({ inner: Type.Object({ a: Type.String() }) }) })] }), /open objects at #\/properties\/inner/)
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x/{id}' })] }), /path parameters \[id\]/)
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x/{id}', params: StrictObject({ other: Type.String() }) })] }), /path parameters/)
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x' }), defineRoute({ ...base, operationId: 'y', path: '/x' })] }), /declared twice/)
  await t.rejects(startServer({ log: silentLogger, routes: [defineRoute({ ...base, path: '/x', auth: 'session' })] }), /authenticate/)
  const strict = Strict(Type.Object({ a: Type.String() }, { description: 'kept' }))
  t.equal((strict as unknown as Record<string, unknown>)['additionalProperties'], false)
  t.equal((strict as unknown as Record<string, unknown>)['description'], 'kept', 'Strict keeps the other options')
})

t.test('graceful shutdown: stops accepting, finishes the in-flight request, then resolves', async (t) => {
  // The handler answers when the test releases it, not after a delay: what the close waits for does not depend on how
  // loaded the machine is (a 300 ms handler against a 50 ms look could be over before the look).
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  const held = defineRoute({
    method: 'get',
    path: '/held',
    operationId: 'held',
    callers: 'a test',
    summary: 'Answers once released',
    auth: 'none',
    responses: { 200: { description: 'Released', schema: StrictObject({ released: Type.Boolean() }) } },
    handler: async () => {
      await released
      return { status: 200, body: { released: true } }
    },
  })
  const { server, logs } = await startTestServer({ routes: [...testRoutes, held] })
  const answer = fetch(`${server.url}/held`).then(async (r) => ({ status: r.status, body: await r.json() }))
  while (server.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(server.inFlight(), 1)
  const closing = server.close(60_000)
  let closed = false
  void closing.then(() => { closed = true })
  // The front stops accepting in its own thread, a message away: connect until a connection is refused.
  while (await fetch(`${server.url}/items/a`).then(() => true, () => false)) await new Promise((resolve) => setTimeout(resolve, 5))
  t.pass('new connections are refused once closing')
  t.notOk(closed, 'close waits for the in-flight request')
  release()
  const result = await closing
  t.same(result, { drained: true, abandoned: 0 })
  t.same(await answer, { status: 200, body: { released: true } }, 'the in-flight request got its full answer')
  t.ok(logs.some((line) => line.msg === 'closed' && line['drained'] === true))
  t.equal(await server.close(), result, 'close is idempotent')
})

t.test('graceful shutdown gives up after its timeout and reports the abandoned requests', async (t) => {
  const { server } = await startTestServer()
  const slow = fetch(`${server.url}/slow?ms=2000`).then((r) => r.status, (error: Error) => error)
  while (server.inFlight() === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  const result = await server.close(100)
  t.same(result, { drained: false, abandoned: 1 })
  t.type(await slow, Error, 'the abandoned request sees its connection closed')
})

t.test('a request whose client goes away after sending its body stays in flight until its handler ends', async (t) => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let entered = false
  let sawAbort = false
  const held = defineRoute({
    method: 'post',
    path: '/held',
    operationId: 'held',
    callers: 'a test',
    summary: 'Answers once released',
    auth: 'none',
    body: StrictObject({ n: Type.Integer() }),
    responses: { 200: { description: 'The body', schema: StrictObject({ n: Type.Integer() }) } },
    handler: async ({ body, signal }) => {
      entered = true
      signal.addEventListener('abort', () => { sawAbort = true })
      await released
      return { status: 200, body }
    },
  })
  const server = await startServer({ transport: testTransport, routes: [held], log: silentLogger, port: 0 })
  t.teardown(async () => { await server.close(100) })
  const client = new AbortController()
  const answer = fetch(`${server.url}/held`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}', signal: client.signal }).catch((error: Error) => error)
  while (!entered) await sleep(5)
  client.abort()
  await answer
  while (!sawAbort) await sleep(5)
  t.equal(server.inFlight(), 1, 'the abort after the body does not end the request: its handler still runs')
  release()
  while (server.inFlight() > 0) await sleep(5)
  t.same(await server.close(100), { drained: true, abandoned: 0 })
})

t.test('port 0 binds a free port and reports it', async (t) => {
  const a = await startServer({ transport: testTransport, routes: testRoutes, log: silentLogger, port: 0 })
  const b = await startServer({ transport: testTransport, routes: testRoutes, log: silentLogger, port: 0 })
  t.teardown(async () => { await a.close(100); await b.close(100) })
  t.ok(a.port > 0 && b.port > 0 && a.port !== b.port)
  t.equal(a.url, `http://127.0.0.1:${a.port}`)
  await t.rejects(startServer({ transport: testTransport, routes: testRoutes, log: silentLogger, port: a.port }), /cannot listen/)
})
