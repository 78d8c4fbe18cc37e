// The discovery documents: GET /openapi.json is a valid OpenAPI 3.1 document that lists every route of spec
// section 4 (plus the SIWE routes); /.well-known/service.json and /llms.txt name the same networks, contracts and
// endpoints as the document and the configuration.
import { Validator } from '@seriousme/openapi-schema-validator'
import { readFileSync } from 'node:fs'
import t from 'tap'
import { callersLine } from '../../src/api/openapi.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startHarness, USDC, type Harness } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, type Json } from './fixtures/api.ts'

// Spec section 4, row by row; network-b is the devnet's self-facilitated network, devnet-b.
const SPEC_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/health'],
  ['GET', '/.well-known/service.json'],
  ['GET', '/openapi.json'],
  ['GET', '/llms.txt'],
  ['GET', '/x402/devnet-b-facilitator/supported'],
  ['POST', '/x402/devnet-b-facilitator/verify'],
  ['POST', '/x402/devnet-b-facilitator/settle'],
  ['GET', '/credit/state'],
  ['POST', '/credit/jobs'],
  ['POST', '/credit/jobs/{jobId}/collateral'],
  ['POST', '/credit/backing-sources'],
  ['GET', '/credit/backing-sources'],
  ['POST', '/credit/request'],
  ['POST', '/credit/match'],
  ['POST', '/credit/dispatch'],
  ['POST', '/credit/offers/{offerId}/supplier-payment'],
  ['POST', '/credit/jobs/{jobId}/complete'],
  ['POST', '/credit/advances/{advanceId}/repay'],
  ['POST', '/credit/jobs/{jobId}/fail'],
  ['POST', '/credit/advances/{advanceId}/liquidate'],
  ['GET', '/lenders'],
  ['POST', '/lenders/register'],
  ['GET', '/lenders/wallets'],
  ['GET', '/lenders/{address}/wallet'],
  ['GET', '/lenders/{address}/actions'],
  ['POST', '/credit-score'],
]
// DESIGN section 7: additions to the spec that belong in the document.
const AUTH_ROUTES = [['GET', '/auth/nonce'], ['POST', '/auth/session'], ['POST', '/auth/session/refresh'], ['DELETE', '/auth/session'], ['DELETE', '/auth/sessions']] as const
// Every credit and lender mutation needs a session (DESIGN section 7); discovery, health and public reads do not.
const SESSION_ROUTES = new Set([
  'POST /credit/jobs', 'POST /credit/jobs/{jobId}/collateral', 'POST /credit/backing-sources', 'POST /credit/request', 'POST /credit/match',
  'POST /credit/dispatch', 'POST /credit/offers/{offerId}/supplier-payment', 'POST /credit/jobs/{jobId}/complete', 'POST /credit/advances/{advanceId}/repay',
  'POST /credit/jobs/{jobId}/fail', 'POST /credit/advances/{advanceId}/liquidate', 'POST /lenders/register', 'GET /lenders/{address}/actions', 'GET /events',
  'POST /auth/session/refresh', 'DELETE /auth/session', 'DELETE /auth/sessions', 'POST /lenders/{address}/agent/recheck', 'POST /lenders/{address}/withdraw', 'POST /lenders/{address}/session-key', 'POST /operator/reconcile',
  'PUT /suppliers/{domain}', 'DELETE /suppliers/{domain}',
])

let h: Harness
let doc: Json
let catalog: Json
let llms: string
let llmsType: string
t.before(async () => {
  h = await startHarness()
  const client = new CreditClient(h.url)
  const reply = await client.get('/openapi.json')
  if (reply.status !== 200) throw new Error(`openapi.json ${reply.status}`)
  doc = reply.body
  catalog = (await client.get('/.well-known/service.json')).body
  const text = await client.get('/llms.txt')
  llms = text.body
  llmsType = text.headers.get('content-type') ?? ''
})
t.teardown(async () => {
  await h.stop()
})

const operations = (document: Json): string[] =>
  Object.entries(document['paths'] as Record<string, Json>).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))

t.test('GET /openapi.json is a valid OpenAPI 3.1.0 document, interface version 0.1.0', async (t) => {
  const validator = new Validator()
  const result = await validator.validate(doc as never)
  t.same(result.errors, undefined, 'the validator finds no error')
  t.equal(result.valid, true)
  t.equal(validator.version, '3.1')
  t.equal(doc['openapi'], '3.1.0')
  t.equal(doc['info']['version'], '0.1.0')
  t.same(doc['servers'], [{ url: h.url, description: 'This deployment' }])
  t.equal(doc['paths']['/openapi.json']['get']['responses']['200'] !== undefined, true)
})

t.test('the document lists every method and path of spec section 4, and the SIWE routes', async (t) => {
  t.equal(SPEC_ROUTES.length, 26, 'the spec table has 26 rows')
  const listed = new Set(operations(doc))
  for (const [method, path] of [...SPEC_ROUTES, ...AUTH_ROUTES]) t.ok(listed.has(`${method} ${path}`), `${method} ${path} is documented`)
  for (const op of listed) {
    const [method, path] = op.split(' ') as [string, string]
    const security = doc['paths'][path][method.toLowerCase()]['security']
    t.same(security, SESSION_ROUTES.has(op) ? [{ bearerAuth: [] }] : [], `${op}: ${SESSION_ROUTES.has(op) ? 'needs' : 'does not need (security: [])'} a bearer session`)
    const responses = doc['paths'][path][method.toLowerCase()]['responses'] as Json
    t.ok(Object.keys(responses).some((s) => s.startsWith('2')), `${op} documents a success`)
    for (const [status, response] of Object.entries(responses)) {
      if (Number(status) >= 400 && response['content'] !== undefined) t.ok(response['content']['application/problem+json'], `${op} ${status} is problem+json`)
    }
  }
  t.equal(doc['paths']['/credit-score']['post']['responses']['503'] !== undefined, true, '/credit-score documents its 503')
})

t.test('responses of the discovery routes match their documented schemas', async (t) => {
  const client = new CreditClient(h.url)
  for (const path of ['/health', '/.well-known/service.json', '/openapi.json', '/llms.txt', '/credit/state', '/lenders', '/lenders/wallets', '/credit/backing-sources', '/auth/nonce']) {
    const reply = await client.get(path)
    t.equal(reply.status, 200, path)
    expectDocumented(t, doc, 'get', path, reply)
  }
  t.match(llmsType, /^text\/plain/)
  const missing = await client.get('/no/such/route')
  expectProblem(t, missing, 404, 'not_found', 'an unknown route')
  const wrongMethod = await client.call('DELETE', '/credit/state')
  expectProblem(t, wrongMethod, 405, 'method_not_allowed')
  t.equal(wrongMethod.headers.get('allow'), 'GET, HEAD, OPTIONS')
})

t.test('the catalog names the configured networks, contracts, assets, roles and limits', async (t) => {
  const config = h.app.config
  t.equal(catalog['baseUrl'], h.url)
  t.equal(catalog['openapi'], `${h.url}/openapi.json`)
  t.equal(catalog['llms'], `${h.url}/llms.txt`)
  t.equal(catalog['version'], doc['info']['version'])
  t.same(
    catalog['networks'].map((n: Json) => ({ slug: n['slug'], chainId: n['chainId'], caip2: n['caip2'], creditContract: n['creditContract'], assets: n['assets'].map((x: Json) => [x['symbol'], x['address'], x['decimals']]) })),
    h.devnet.networks.map((n) => ({ slug: n.slug, chainId: n.chainId, caip2: `eip155:${n.chainId}`, creditContract: n.creditContract, assets: n.tokens.map((x) => [x.symbol, x.address, x.decimals]) })),
    'the networks of the configuration',
  )
  t.ok(catalog['networks'].every((n: Json) => n['assets'].some((x: Json) => x['symbol'] === USDC)))
  const selfHosted = catalog['networks'].filter((n: Json) => n['facilitator']['selfHosted'])
  t.same(selfHosted.map((n: Json) => n['slug']), ['devnet-b'], 'devnet-b is self-facilitated')
  t.equal(selfHosted[0]?.['facilitator']['url'], `${h.url}/x402/devnet-b-facilitator`)
  const listed = new Set(operations(doc))
  for (const suffix of ['supported', 'verify', 'settle']) {
    t.ok([...listed].some((op) => op.endsWith(` /x402/devnet-b-facilitator/${suffix}`)), `the facilitator URL serves /${suffix} in the document`)
  }
  t.same(catalog['auth']['chainIds'], h.devnet.networks.map((n) => n.chainId))
  t.equal(catalog['auth']['domain'], new URL(h.url).host)
  t.same(catalog['attestation']['attesters'], config.attesters)
  t.same(catalog['attestation']['attesters'], [h.devnet.accounts.attester.address])
  t.same(catalog['operators'], config.operators)
  // The directory changes while the service runs: the catalog names its route (GET /suppliers), it does not copy it.
  t.match(catalog['suppliers'], { directory: '/suppliers', rule: /supplier_unknown.*supplier_address_unverified.*supplier_not_allowed/ })
  t.ok(catalog['endpoints'].some((e: Json) => e.method === 'GET' && e.path === catalog['suppliers']['directory']), 'the directory route is an endpoint')
  t.equal(catalog['limits']['leaseTtlSeconds'], config.leaseTtlSeconds)
  t.equal(catalog['limits']['offerTtlSeconds'], config.offerTtlSeconds)
  t.equal(catalog['limits']['bodyLimitBytes'], config.bodyLimitBytes)
  t.equal(catalog['rules']['insuranceShareBps'], h.app.service.engine.config.insuranceShareBps)
  // The embedded devnet turns the paid score on: its price and payee are in the catalog (README, "Credit score").
  t.match(catalog['creditScore'], {
    enabled: true,
    path: '/credit-score',
    payment: { x402Version: 2, scheme: 'exact', payTo: h.devnet.accounts.scorePayee.address, amountAtomic: '10000' },
    compute: { component: 'local-process', attestation: 'none' },
  })
})

t.test('the catalog\'s endpoints are exactly the document\'s operations, with the same ids and auth', async (t) => {
  const endpoints = catalog['endpoints'] as Json[]
  t.same(endpoints.map((e) => `${e['method']} ${e['path']}`).sort(), operations(doc).sort())
  for (const e of endpoints) {
    const op = doc['paths'][e['path']][String(e['method']).toLowerCase()]
    t.equal(e['operationId'], op['operationId'], `${e['method']} ${e['path']} operationId`)
    t.equal(e['auth'], op['security'].length === 0 ? 'none' : 'session', `${e['method']} ${e['path']} auth`)
    t.equal(e['callers'], op['x-callers'], `${e['method']} ${e['path']} callers`)
  }
})

t.test('every operation says who may call it: x-callers and the same words in a line of its description', async (t) => {
  for (const path of Object.keys(doc['paths'])) {
    for (const [method, op] of Object.entries(doc['paths'][path] as Record<string, Json>)) {
      const callers = op['x-callers']
      t.ok(typeof callers === 'string' && callers.length > 0, `${method} ${path} has x-callers`)
      t.ok(String(op['description']).split('\n').includes(callersLine(callers)), `${method} ${path}: its description says "${callersLine(callers)}"`)
    }
  }
  // The README's table of the API says the same for the routes it names by one path.
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
  for (const [path, method] of [['/credit/match', 'post'], ['/credit/jobs/{jobId}/complete', 'post'], ['/lenders/{address}/actions', 'get'], ['/credit/advances/{advanceId}/liquidate', 'post']] as const) {
    const row = readme.split('\n').find((line) => line.startsWith(`| ${method.toUpperCase()} | \`${path}\` |`))
    t.equal(row?.split(' | ')[2], doc['paths'][path][method]['x-callers'], `README and OpenAPI agree on ${method} ${path}`)
  }
})

t.test('llms.txt lists the embedded devnet\'s demo accounts, marked test-only, as the service prints them', async (t) => {
  t.match(llms, /^## Devnet accounts \(TEST ONLY\)$/m)
  for (const account of Object.values(h.devnet.accounts)) {
    t.ok(llms.includes(`- ${account.role}: ${account.address} (private key ${account.privateKey})`), `${account.role} with its address and key`)
  }
})

t.test('llms.txt names the same networks, contracts, assets and endpoints', async (t) => {
  t.match(llms, /^# agent-credit/)
  for (const n of catalog['networks'] as Json[]) {
    t.ok(llms.includes(`${n['slug']} (${n['caip2']})`), `network ${n['slug']}`)
    t.ok(llms.includes(n['creditContract']), `credit contract of ${n['slug']}`)
    for (const asset of n['assets'] as Json[]) t.ok(llms.includes(asset['address']), `${asset['symbol']} on ${n['slug']}`)
    t.ok(llms.includes(n['facilitator']['url']), `facilitator of ${n['slug']}`)
  }
  for (const op of operations(doc)) {
    const [method, path] = op.split(' ') as [string, string]
    t.ok(llms.includes(`- [${op}](${h.url}/openapi.json#/paths/${path.replace(/\//g, '~1')}/${method.toLowerCase()}):`), `endpoint ${op}, linked to its operation`)
  }
  for (const [name, url] of [['OpenAPI document', `${h.url}/openapi.json`], ['Service catalog', `${h.url}/.well-known/service.json`]]) t.ok(llms.includes(`- [${name}](${url}):`), `llmstxt.org link list: ${name}`)
  t.ok(llms.includes(`domain "${catalog['auth']['domain']}"`), 'the SIWE domain')
  t.ok(llms.includes(`A lease lasts ${h.app.config.leaseTtlSeconds} s`), 'the lease TTL of the configuration')
  t.ok(llms.includes(`${h.url}/openapi.json`) && llms.includes(`${h.url}/.well-known/service.json`), 'links to the machine-readable documents')
})
