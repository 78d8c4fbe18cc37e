// Malformed input on every POST route of the OpenAPI document (a fast-check property): random JSON values, valid
// bodies with one field broken (wrong type, huge or negative amount, bad address or hash, unknown or missing field),
// malformed JSON text, oversized bodies, non-JSON content types, missing or unknown tokens, odd path parameters.
// Every answer is a 4xx problem+json (never a 5xx), and the credit state, lenders and backing sources stay as they were.
import fc from 'fast-check'
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedJob, readyLender, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { backingSourceBody, PROBLEM, type Json } from './fixtures/api.ts'

const RUNS = 320

let h: Harness
let doc: Json
let token: string
let ids: { jobId: string; offerId: string; lender: string; borrower: string }
let samples: Record<string, Json>

t.before(async () => {
  h = await startHarness()
  doc = (await new CreditClient(h.url).get('/openapi.json')).body
  // Some state for the routes to refuse to change: a lender, a job with a leased offer, a backing source.
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_fuzz', receivableAtomic: usdc(1000) })
  const source = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'src-fuzz', valueAtomic: usdc(100), liquidationValueAtomic: usdc(50), advanceRateBps: 5000 }))
  if (source.status !== 201) throw new Error(JSON.stringify(source.body))
  const offer = (await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_fuzz', usdc(100), usdc(10)))).body.offer
  const match = await borrowerClient.post('/credit/match', { offerId: offer.offerId })
  if (match.body.lease?.lender !== lender.account.address) throw new Error(JSON.stringify(match.body))
  token = borrowerClient.token as string
  ids = { jobId: 'job_fuzz', offerId: offer.offerId, lender: lender.account.address, borrower: borrower.address }
  const hash = `0x${'ab'.repeat(32)}`
  // Valid bodies, one per route that takes a documented shape; each case breaks them in one way.
  samples = {
    '/credit/jobs': { jobId: 'job_fuzz_2', network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: '1000', dueAt: new Date(Date.now() + 86_400_000).toISOString(), fundingTxHash: hash },
    '/credit/jobs/{jobId}/collateral': { amountAtomic: '1000', txHash: hash },
    '/credit/backing-sources': await backingSourceBody(h, borrower.address, { sourceId: 'src-fuzz-2', valueAtomic: 100n, liquidationValueAtomic: 50n, advanceRateBps: 5000 }),
    '/credit/request': creditRequest(h, borrower.address, 'job_fuzz', usdc(10), usdc(1)),
    '/credit/match': { offerId: offer.offerId },
    '/credit/offers/{offerId}/supplier-payment': { lender: lender.account.address, supplierPaymentId: hash },
    '/credit/advances/{advanceId}/repay': { txHash: hash },
    '/credit/jobs/{jobId}/fail': { reason: 'not_delivered' },
    '/lenders/register': { availableLiquidityAtomic: '1000', asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A'] },
    '/auth/session': { message: 'not a siwe message', signature: '0x00' },
  }
})
t.teardown(async () => {
  await h.stop()
})

async function snapshot(): Promise<Json> {
  const client = new CreditClient(h.url)
  const [state, lenders, sources, wallets] = await Promise.all(['/credit/state', '/lenders', '/credit/backing-sources', '/lenders/wallets'].map((p) => client.get(p)))
  return { state: state!.body, lenders: lenders!.body, sources: sources!.body, activity: (wallets!.body as Json[]).map((w) => w['activity']) }
}

// Values no field of any request schema accepts.
const alwaysWrong = fc.constantFrom<unknown>(null, true, false, [], -1, 1.5, 1e30, { x: 1 }, Number.MAX_SAFE_INTEGER * 4)
// Broken amounts, addresses and hashes (strings of the right type, not of the right form).
const wrongString = fc.oneof(
  fc.constantFrom('-1', '-1000000', '1e6', '0x10', ' 1', '01', '1.5', '', '0xZZ', '0x123', `0x${'g'.repeat(40)}`, `0x${'a'.repeat(41)}`, '0x1234'),
  fc.constant('9'.repeat(79)),
  fc.constant(((1n << 256n)).toString()),
  fc.bigInt({ min: -(1n << 300n), max: -1n }).map(String),
)

type Case =
  | { kind: 'json'; value: unknown }
  | { kind: 'broken'; field: number; value: unknown }
  | { kind: 'unknown_field'; name: string; value: unknown }
  | { kind: 'missing'; field: number }
  | { kind: 'text'; text: string }
  | { kind: 'content_type'; type: string }
  | { kind: 'oversized' }
  | { kind: 'no_token' }
  | { kind: 'bad_token'; token: string }

const caseArb: fc.Arbitrary<Case> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 3 }).filter((v) => !(typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0)) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('broken' as const), field: fc.nat(), value: fc.oneof(alwaysWrong, wrongString) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unknown_field' as const), name: fc.string({ minLength: 1, maxLength: 12 }).filter((n) => !/^(__proto__)$/.test(n)), value: fc.jsonValue({ maxDepth: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('missing' as const), field: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('text' as const), text: fc.constantFrom('{', '{"a":', 'nul', '[1,]', "{'a':1}", '\u0000', '{"a":1}}') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('content_type' as const), type: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'applicationjson') }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'oversized' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'no_token' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bad_token' as const), token: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) }) },
)

// '.' and '..' are dot segments: the client's URL parser removes them before any request is sent (another route).
const paramArb = fc.oneof(fc.constant('known'), fc.constant('unknown'), fc.string({ maxLength: 20 }).filter((p) => p !== '.' && p !== '..'))

function concrete(template: string, param: string): string {
  return template.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    if (param === 'known') return name === 'jobId' ? ids.jobId : name === 'offerId' ? ids.offerId : name === 'advanceId' ? 'adv_1' : ids.lender
    if (param === 'unknown') return name === 'jobId' ? 'job_nobody' : name === 'offerId' ? 'off_424242' : name === 'advanceId' ? 'adv_424242' : '0x000000000000000000000000000000000000dEaD'
    return encodeURIComponent(param) || 'x'
  })
}

function body(template: string, c: Case): { text: string; type: string } {
  const sample = samples[template]
  const json = (value: unknown) => ({ text: JSON.stringify(value), type: 'application/json' })
  switch (c.kind) {
    case 'json':
      return json(c.value)
    case 'broken': {
      if (sample === undefined) return json({ field: c.value })
      const keys = Object.keys(sample)
      const key = keys[c.field % keys.length] as string
      // Broken amounts, addresses and hashes only where the field has that form; a free label gets an over-long text.
      const formatted = typeof sample[key] !== 'string' || /^(0x[0-9a-fA-F]*|[0-9]+)$/.test(sample[key])
      const value = typeof c.value === 'string' && !formatted ? 'x'.repeat(5000) : c.value
      return json({ ...sample, [key]: value })
    }
    case 'unknown_field': {
      const name = sample !== undefined && Object.hasOwn(sample, c.name) ? `${c.name}_x` : c.name
      return json({ ...(sample ?? {}), [name]: c.value })
    }
    case 'missing': {
      if (sample === undefined) return json([])
      const copy = { ...sample }
      delete copy[Object.keys(sample)[c.field % Object.keys(sample).length] as string]
      return json(copy)
    }
    case 'text':
      return { text: c.text, type: 'application/json' }
    case 'content_type':
      return { text: JSON.stringify(sample ?? {}), type: c.type }
    case 'oversized':
      return json({ ...(sample ?? {}), pad: 'x'.repeat(h.app.config.bodyLimitBytes) })
    case 'no_token':
    case 'bad_token':
      // A valid body: only the missing or unknown token is wrong (or, without auth, the route's own rules refuse it).
      return json(sample ?? { probe: true })
  }
}

t.test('every POST route answers malformed input with a 4xx problem+json and changes nothing', async (t) => {
  const routes = Object.entries(doc['paths'] as Record<string, Json>).filter(([, item]) => item['post'] !== undefined).map(([path, item]) => ({ path, secured: item['post']['security'].length > 0 }))
  t.ok(routes.length >= 16, `${routes.length} POST routes in the document`)
  const before = await snapshot()
  const seen = new Map<string, Set<number>>()
  const oversized = { answered413: 0, closed: 0 }

  const out = await fc.check(
    fc.asyncProperty(fc.nat({ max: routes.length - 1 }), caseArb, paramArb, async (index, c, param) => {
      const route = routes[index]!
      const { text, type } = body(route.path, c)
      const headers: Record<string, string> = { 'content-type': type }
      if (c.kind === 'bad_token') headers['authorization'] = `Bearer ${c.token}`
      else if (c.kind !== 'no_token') headers['authorization'] = `Bearer ${token}`
      const url = h.url + concrete(route.path, param)
      let response: Response
      try {
        response = await fetch(url, { method: 'POST', headers, body: text })
      } catch (error) {
        // The server may close an oversized upload before reading it; that is a refusal, and it must have said 413.
        if (c.kind === 'oversized') {
          oversized.closed += 1
          return true
        }
        throw error
      }
      const raw = await response.text()
      const status = response.status
      seen.set(route.path, (seen.get(route.path) ?? new Set()).add(status))
      const context = `${route.path} ${c.kind} -> ${status} ${raw.slice(0, 300)}`
      if (status < 400 || status >= 500) throw new Error(`not a 4xx: ${context}`)
      if ((response.headers.get('content-type') ?? '').split(';')[0] !== PROBLEM) throw new Error(`not problem+json: ${context}`)
      const problem = JSON.parse(raw) as Json
      for (const field of ['type', 'title', 'detail', 'code']) if (typeof problem[field] !== 'string') throw new Error(`problem without ${field}: ${context}`)
      if (problem['status'] !== status) throw new Error(`status mismatch: ${context}`)
      if (c.kind === 'oversized' && status !== 413) throw new Error(`oversized but not 413: ${context}`)
      if (c.kind === 'oversized') oversized.answered413 += 1
      if (c.kind === 'content_type' && status !== 415) throw new Error(`non-JSON but not 415: ${context}`)
      if (route.secured && c.kind === 'no_token' && status !== 401) throw new Error(`no token but not 401: ${context}`)
      if (route.secured && c.kind === 'bad_token' && status !== 401) throw new Error(`unknown token but not 401: ${context}`)
      return true
    }),
    { numRuns: RUNS, seed: Number(process.env['FC_SEED'] ?? Date.now() % 2 ** 31), endOnFailure: true },
  )
  t.notOk(out.failed, `${out.numRuns} malformed requests, each refused with a 4xx problem+json`, {
    seed: out.seed,
    counterexample: JSON.stringify(out.counterexample),
    error: out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance),
  })
  t.ok(oversized.answered413 > 0, 'oversized bodies are answered 413', oversized)
  t.same(await snapshot(), before, 'credit state, lenders, lender activity and backing sources are unchanged')
  t.equal(seen.size, routes.length, `every POST route was exercised (${seen.size} of ${routes.length})`, { seen: Object.fromEntries([...seen].map(([k, v]) => [k, [...v]])) })
  const health = await new CreditClient(h.url).get('/health')
  t.equal(health.status, 200, 'the service still serves')
})
