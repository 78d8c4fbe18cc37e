// What the code can answer, compared with what the published documents say about it. The problems are read from the
// source (fixtures/problem-sites.ts): every problem the service builds with a literal status and code, every literal
// refusal of the engine and every refusal of the machines' tables (their status as src/api/problems.ts answers them).
// - A code sends Retry-After everywhere it is answered or nowhere, and the OpenAPI document declares Retry-After on
//   every response of a status that can carry it.
// - src/api/retry-after.ts, and from it llms.txt and the OpenAPI document's Retry-After header, name which 429 and 503
//   codes carry Retry-After (wait, then the same request) and which do not.
// - The README's table of codes (section "Errors": the one list of codes by status the documents have; the OpenAPI
//   document names the codes of each operation in its responses' descriptions) lists each code under its status.
// A code added in the code and not in the documents fails here; so does a problem whose status or code is computed
// and is not one of the families below.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { problemOf } from '../../src/api/problems.ts'
import { NO_RETRY_AFTER_CODES, RETRY_AFTER_CODES } from '../../src/api/retry-after.ts'
import { BorrowerConsentError } from '../../src/chain/consent.ts'
import { ContractRevertError } from '../../src/chain/operator.ts'
import { TooManyPostingsError } from '../../src/chain/posted-collateral.ts'
import { ProofRefusedError } from '../../src/chain/proofs.ts'
import { JobRegistrationRefusedError } from '../../src/chain/reclaim-window.ts'
import { EngineRefusedError } from '../../src/engine/errors.ts'
import type { ErrorClass } from '../../src/engine/types.ts'
import type { HttpProblem } from '../../src/http/problem.ts'
import { AgentLinkError } from '../../src/reputation/erc8004.ts'
import { refusals } from '../../machines/index.ts'
import { startHarness, type Harness } from '../fixtures/service.ts'
import type { Json } from './fixtures/api.ts'
import { engineRefusalSites, problemSites } from './fixtures/problem-sites.ts'

const answer = (error: Error) => problemOf(error) as HttpProblem
const asPairs = (...problems: HttpProblem[]) => problems.map((p) => [p.status, p.code] as const)

/**
 * Problems whose code (or status) is computed, by file and expression, with the codes they answer: typed errors built
 * with each code their constructor's type allows today (a code added to such a type must be added here too), and the
 * status src/api/problems.ts gives each; empty when the check below reads the codes elsewhere.
 */
const COMPUTED: Readonly<Record<string, ReadonlyArray<readonly [number, string]>>> = {
  // The engine's refusals: their literal codes and the machines' tables.
  'api/problems.ts e.error.code': [],
  'api/problems.ts `proof_${e.reason}`': asPairs(
    ...(['not_found', 'reverted', 'wrong_contract', 'wrong_arguments', 'already_used', 'too_few_confirmations'] as const).map((reason) => answer(new ProofRefusedError(reason, ''))),
  ),
  // One per error of the contract's ABI: the README names them as a family.
  'api/problems.ts contractCode(e.errorName)': asPairs(answer(new ContractRevertError('devnet-a', 'JobAlreadySettled', [], undefined))),
  'api/problems.ts e.code': asPairs(
    answer(new BorrowerConsentError('borrower_consent_required', '')),
    answer(new BorrowerConsentError('borrower_consent_invalid', '')),
    answer(new TooManyPostingsError('')),
    answer(new JobRegistrationRefusedError('job_not_open_on_chain', '')),
    answer(new JobRegistrationRefusedError('job_reclaimable_before_due', '')),
    ...(['agent_not_controlled', 'agent_not_found', 'agent_registry_unknown', 'agent_already_linked'] as const).map((code) => answer(new AgentLinkError(code, ''))),
  ),
  'api/routes/credit.ts `${kind}_not_found`': [[404, 'job_not_found'], [404, 'offer_not_found'], [404, 'advance_not_found']],
  'api/routes/score.ts refusal.code': [[402, 'payment_required'], [402, 'payment_invalid'], [402, 'payment_not_accepted'], [402, 'payment_already_used'], [402, 'payment_settlement_failed'], [402, 'payment_validity_too_long'], [409, 'payment_in_flight']],
  // `refused(code, ...)`: every sign-in refusal, siwe_<why>.
  'auth/siwe.ts code': [[401, 'siwe_signature_invalid']],
  // The helpers' own definitions: each call of one is a site of its own.
  'http/problem.ts code': [],
  'x402/routes.ts UNSUPPORTED_CODES[error.field]': [[400, 'x402_version_unsupported'], [400, 'x402_scheme_unsupported'], [400, 'x402_network_unsupported']],
}

const sites = problemSites()

/** Every (status, code) the code answers with a literal code, where it was found. */
function answeredCodes(): Map<string, string> {
  const answered = new Map<string, string>()
  for (const site of sites) {
    for (const status of site.statuses ?? []) for (const code of site.codes ?? []) answered.set(`${status} ${code}`, site.where)
  }
  for (const [family, pairs] of Object.entries(COMPUTED)) for (const [status, code] of pairs) answered.set(`${status} ${code}`, family)
  const engineAnswer = (errorClass: string, code: string) => answer(new EngineRefusedError({ class: errorClass as ErrorClass, code, message: '' }))
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
    t.ok(COMPUTED[`${file} ${site.codeText}`], `${site.where}: a computed problem (${site.statusText}, ${site.codeText}) of a known family`)
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
  t.ok(statuses.has('429') && statuses.has('503'), `statuses with Retry-After: ${[...statuses].join(', ')}`)
  let checked = 0
  for (const [path, item] of Object.entries(doc['paths'] as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const status of statuses) {
        const response = (op['responses'] as Json)[status]
        if (response === undefined) continue
        checked += 1
        t.ok((response['headers'] as Json)?.['Retry-After'], `${method.toUpperCase()} ${path} ${status} declares Retry-After`)
      }
    }
  }
  // Every operation documents 429 (the limiter is on) and 503 (shutting_down): test/api/outsider4-shutting-down.test.ts.
  t.ok(checked >= 2 * Object.values(doc['paths'] as Record<string, Json>).flatMap((item) => Object.keys(item)).length, `${checked} responses checked`)
  t.match((doc['components'] as Json)['headers']['Retry-After'], { schema: { type: 'integer', minimum: 0 } })
})

t.test('src/api/retry-after.ts lists every 429 and 503 code under whether it carries Retry-After, with its status', async (t) => {
  const listed = Object.entries(RETRY_AFTER_CODES).flatMap(([status, codes]) => codes.map((code) => `${status} ${code}`))
  const answered = [...retryAfterCodes].flatMap(([code, statuses]) => statuses.map((status) => `${status} ${code}`))
  t.same(listed.sort(), answered.sort(), 'RETRY_AFTER_CODES: exactly the codes answered with Retry-After')
  const withoutListed = NO_RETRY_AFTER_CODES.map(([code, status]) => `${status} ${code}`)
  const withoutAnswered = sites.flatMap((s) => (s.codes ?? []).filter((code) => noRetryAfterCodes.has(code)).flatMap((code) => (s.statuses ?? []).map((status) => `${status} ${code}`)))
  t.same(withoutListed.sort(), [...new Set(withoutAnswered)].sort(), 'NO_RETRY_AFTER_CODES: exactly the 429 and 503 codes answered without it')
})

/** The snake_case codes a text names. */
const codesIn = (text: string) => [...new Set([...text.matchAll(/\b([a-z][a-z0-9]*_[a-z0-9_]+)\b/g)].map((m) => m[1] as string))].sort()

t.test('llms.txt and the OpenAPI document say which 429 and 503 codes carry Retry-After, and which do not', async (t) => {
  const section = llms.split('\n## ').find((s) => s.startsWith('Waiting and retrying'))
  t.ok(section, 'llms.txt has a section "Waiting and retrying"')
  const line = (prefix: string) => section?.split('\n').find((l) => l.startsWith(prefix)) ?? ''
  t.same(codesIn(line('- With Retry-After')), [...retryAfterCodes.keys()].sort(), 'llms.txt: exactly the codes that carry it')
  t.same(codesIn(line('- Without Retry-After')), [...noRetryAfterCodes].sort(), 'llms.txt: exactly the 429 and 503 codes that never do')
  t.match(line('- With Retry-After'), /same Idempotency-Key/, 'llms.txt: a retry reuses the Idempotency-Key')
  const [withIt, withoutIt] = String((doc['components'] as Json)['headers']['Retry-After']['description']).split('without it')
  t.same(codesIn(withIt ?? ''), [...retryAfterCodes.keys()].sort(), 'the Retry-After header\'s description: the codes that carry it')
  t.same(codesIn(withoutIt ?? ''), [...noRetryAfterCodes].sort(), 'and those that never do')
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
