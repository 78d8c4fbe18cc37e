// What the code can answer, compared with what the published documents say about it. The problems are read from the
// source (fixtures/problem-sites.ts): every problem the service builds with a literal status and code, every literal
// refusal of the engine and every refusal of the machines' tables (their status as src/api/problems.ts answers them).
// - A code sends Retry-After everywhere it is answered or nowhere, and the OpenAPI document declares Retry-After on
//   every response of a status that can carry it.
// - llms.txt names which 429 and 503 codes carry Retry-After (wait, then the same request) and which do not.
// - The README's table of codes (section "Errors": the one list of codes by status the documents have; the OpenAPI
//   document names the codes of each operation in its responses' descriptions) lists each code under its status.
// A code added in the code and not in the documents fails here; so does a problem whose status or code is computed
// and is not one of those below, whose codes are documented as a family.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { problemOf } from '../../src/api/problems.ts'
import { EngineRefusedError } from '../../src/engine/errors.ts'
import type { ErrorClass } from '../../src/engine/types.ts'
import { HttpProblem } from '../../src/http/problem.ts'
import { refusals } from '../../machines/index.ts'
import { startHarness, type Harness } from '../fixtures/service.ts'
import type { Json } from './fixtures/api.ts'
import { engineRefusalSites, problemSites } from './fixtures/problem-sites.ts'

/** Problems whose code (or status) is computed, by file and expression: how their codes are documented. */
const COMPUTED: Readonly<Record<string, string>> = {
  'api/problems.ts e.error.code': 'the engine\'s refusals: their literal codes and the machines\' tables are checked below',
  'api/problems.ts `proof_${e.reason}`': 'proof_<reason>: README lists each reason',
  'api/problems.ts contractCode(e.errorName)': 'contract_<error>: README, the ABI\'s errors in the catalog',
  'api/problems.ts e.code': 'typed errors of consent, postings, job registration and ERC-8004 links: README lists their codes',
  'api/routes/credit.ts `${kind}_not_found`': '<kind>_not_found: README lists each kind',
  'api/routes/score.ts refusal.code': 'x402 payment refusals: README row 402',
  'auth/siwe.ts code': 'siwe_*: README row 401',
  'http/problem.ts code': 'the helpers\' own definitions: each call is a site of its own',
  'x402/routes.ts UNSUPPORTED_CODES[error.field]': 'x402_*_unsupported: the facilitator\'s 400 description',
}

const sites = problemSites()

/** Every (status, code) the code answers with a literal code, where it was found. */
function answeredCodes(): Map<string, string> {
  const answered = new Map<string, string>()
  for (const site of sites) {
    for (const status of site.statuses ?? []) for (const code of site.codes ?? []) answered.set(`${status} ${code}`, site.where)
  }
  const engineAnswer = (errorClass: string, code: string) => problemOf(new EngineRefusedError({ class: errorClass as ErrorClass, code, message: '' })) as HttpProblem
  for (const site of engineRefusalSites()) answered.set(`${engineAnswer(site.errorClass, site.code).status} ${site.code}`, site.where)
  for (const [kind, table] of Object.entries(refusals)) {
    for (const rule of Object.values(table)) {
      // The engine turns a refused send into a conflict (src/engine/actors.ts `expect`).
      for (const code of [rule.code, rule.guarded, ...Object.values(rule.states ?? {})]) if (code !== undefined) answered.set(`${engineAnswer('conflict', code).status} ${code}`, `machines: ${kind}`)
    }
  }
  return answered
}

/** Codes answered with Retry-After somewhere, with their statuses. */
const retryAfterCodes = new Map(sites.filter((s) => s.retryAfter).flatMap((s) => (s.codes ?? []).map((code) => [code, s.statuses ?? []] as const)))
/** 429 and 503 codes never answered with Retry-After. */
const noRetryAfterCodes = new Set(
  sites.filter((s) => !s.retryAfter && (s.statuses ?? []).some((status) => status === 429 || status === 503)).flatMap((s) => s.codes ?? []).filter((code) => !retryAfterCodes.has(code)),
)

let h: Harness
let doc: Json
let llms: string
t.before(async () => {
  // The rate limit on, as in production: the document then has every operation's 429.
  h = await startHarness({ config: { rateLimitPerSecond: 1000 } })
  doc = (await (await fetch(`${h.url}/openapi.json`)).json()) as Json
  llms = await (await fetch(`${h.url}/llms.txt`)).text()
})
t.teardown(async () => {
  await h.stop()
})

t.test('the source\'s problems are found, and each computed one is a known family', async (t) => {
  t.ok(sites.length > 50, `${sites.length} problem sites read`)
  t.ok(retryAfterCodes.has('rate_limited') && retryAfterCodes.has('chain_reads_exhausted'), 'Retry-After is seen, directly and through a constant')
  for (const site of sites.filter((s) => s.codes === undefined || s.statuses === undefined)) {
    const file = site.where.split(':')[0]
    t.ok(COMPUTED[`${file} ${site.codeText}`], `${site.where}: a computed problem (${site.statusText}, ${site.codeText}) of a documented family`)
    t.ok(!site.retryAfter, `${site.where}: a computed problem sends no Retry-After (its codes would be in no list)`)
  }
})

t.test('a code carries Retry-After wherever it is answered, or nowhere', async (t) => {
  for (const site of sites) {
    for (const code of site.codes ?? []) {
      t.equal(site.retryAfter, retryAfterCodes.has(code), `${site.where}: ${code} ${retryAfterCodes.has(code) ? 'with' : 'without'} Retry-After, as everywhere`)
    }
  }
})

t.test('the OpenAPI document declares Retry-After on every response of a status that can carry it', async (t) => {
  const statuses = new Set([...retryAfterCodes.values()].flat().map(String))
  t.same([...statuses].sort(), ['429', '503'])
  let checked = 0
  for (const [path, item] of Object.entries(doc['paths'] as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const status of statuses) {
        const response = (op['responses'] as Json)[status]
        t.ok(response, `${method.toUpperCase()} ${path} documents ${status}`)
        if (response === undefined) continue
        checked += 1
        t.ok((response['headers'] as Json)?.['Retry-After'], `${method.toUpperCase()} ${path} ${status} declares Retry-After`)
      }
    }
  }
  t.ok(checked > 100, `${checked} responses checked`)
  t.match((doc['components'] as Json)['headers']['Retry-After'], { schema: { type: 'integer', minimum: 0 } })
})

t.test('llms.txt says which 429 and 503 codes carry Retry-After, and which do not', async (t) => {
  const section = llms.split('\n## ').find((s) => s.startsWith('Waiting and retrying'))
  t.ok(section, 'a section "Waiting and retrying"')
  const codesOf = (prefix: string) => new Set([...(section?.split('\n').find((line) => line.startsWith(prefix)) ?? '').matchAll(/\b([a-z][a-z0-9]*_[a-z0-9_]+)\b/g)].map((m) => m[1] as string))
  const withRetryAfter = codesOf('- With Retry-After')
  const withoutRetryAfter = codesOf('- Without Retry-After')
  t.same([...withRetryAfter].sort(), [...retryAfterCodes.keys()].sort(), 'exactly the codes that carry it')
  t.same([...withoutRetryAfter].sort(), [...noRetryAfterCodes].sort(), 'exactly the 429 and 503 codes that never do')
  t.match(section, /same Idempotency-Key/, 'a retry reuses the Idempotency-Key')
})

t.test('the README\'s table of codes lists each code the service answers under its status', async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('\n### Errors\n'), readme.indexOf('\n### Rate limits\n'))
  const rows = new Map<number, RegExp[]>()
  for (const [, status, text] of table.matchAll(/^\| (\d{3}) \| (.*) \|$/gm)) {
    // `siwe_*` and `contract_<error>` name families of codes.
    rows.set(Number(status), [...(text as string).matchAll(/`([^`]+)`/g)].map(([, name]) => new RegExp(`^${(name as string).replace(/\*|<[a-z]+>/g, '[a-z0-9_]+')}$`)))
  }
  const answered = answeredCodes()
  t.ok(answered.size > 90, `${answered.size} codes by status`)
  for (const [statusCode, where] of answered) {
    const [status, code] = statusCode.split(' ') as [string, string]
    t.ok(rows.get(Number(status))?.some((name) => name.test(code)), `${status} ${code} (${where}) is in the README's row ${status}`)
  }
})
