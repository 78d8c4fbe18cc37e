// A repeated field of those the pipeline reads (X-Request-Id, Origin, Authorization, Content-Type, the route's own
// Idempotency-Key): a route with a body reads them in one field pass (perfhdr17), a route without one too when it has
// fields of its own, else header by header; both transports, with the front and without it (`legacyClients: false`),
// must read the same: the first value of each, but a route's own field joined (`k-1, k-2`, RFC 9110 section 5.3), which
// the Idempotency-Key rule refuses (a single item). Before fields18, node:http joined every repeated field (a fresh
// request id, no CORS) and uWS handed the route the first key alone (outsider18).
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { parseResponse, rawUntil, responsesEnded } from './fixtures/raw.ts'
import { testTransport } from './fixtures/routes.ts'

const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const Echo = StrictObject({ headers: Type.Record(Type.String(), Type.String()), wallet: Type.String() })
const route = (path: string, body: boolean) => defineRoute({
  method: 'post', path, operationId: path.slice(1), callers: 'any caller (a test route)', summary: 'What the handler was given',
  auth: 'session', headers: ['Idempotency-Key'], ...(body ? { body: StrictObject({ n: Type.Optional(Type.Integer()) }) } : {}),
  responses: { 200: { description: 'Its input', schema: Echo } },
  handler: ({ headers, session }) => ({ status: 200, body: { headers, wallet: session.address } }),
})
const routes = [route('/body', true), route('/bodyless', false)]
const authenticate = async (token: string) => (token.startsWith('token-0x') ? { address: token.slice(6) as `0x${string}`, tokenHash: token } : undefined)

for (const legacyClients of testTransport === 'uws' ? [true, false] : [true]) {
  const server = await startServer({
    transport: testTransport, routes, port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate, legacyClients,
    corsOrigins: ['https://dashboard.example'],
  })
  t.teardown(() => server.close(500))
  const post = async (path: string, fields: string) => {
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\n${fields}Content-Length: 2\r\n\r\n{}`
    return parseResponse((await rawUntil(server.port, [head], responsesEnded(1))).text)
  }

  t.test(`${testTransport}${testTransport === 'uws' ? (legacyClients ? ' with the front' : ' without the front') : ''}: each repeated field read as its first, with a body and without`, async (t) => {
    const fields = [
      'Content-Type: application/json', 'Content-Type: text/plain',
      `Authorization: Bearer token-${WALLET}`, 'Authorization: Bearer nobody',
      'X-Request-Id: first-id', 'X-Request-Id: second-id',
      'Origin: https://dashboard.example', 'Origin: https://evil.example',
      'Idempotency-Key: k-1', 'Idempotency-Key: k-2',
    ].map((line) => `${line}\r\n`).join('')
    const reads = await Promise.all(['/body', '/bodyless'].map(async (path) => {
      const answer = await post(path, fields)
      const body = answer.status === 200 ? JSON.parse(answer.body) : {}
      // An id the service made itself (it differs per request) shows as `minted`.
      const requestId = ['first-id', 'second-id'].includes(answer.headers['x-request-id'] ?? '') ? answer.headers['x-request-id'] : 'minted'
      return { status: answer.status, wallet: body.wallet, headers: body.headers, requestId, cors: answer.headers['access-control-allow-origin'] }
    }))
    t.same(reads[0], { status: 200, wallet: WALLET, headers: { 'idempotency-key': 'k-1, k-2' }, requestId: 'first-id', cors: 'https://dashboard.example' }, 'the first of each, the own field joined')
    t.same(reads[1], reads[0], 'the route without a body reads what the route with one reads')
  })

  t.test(`${testTransport}${testTransport === 'uws' ? (legacyClients ? ' with the front' : ' without the front') : ''}: a keyed POST without any body (no Content-Length) reads its own field whole`, async (t) => {
    const bare = async (keys: string[]) => {
      const head = `POST /bodyless HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer token-${WALLET}\r\n${keys.map((key) => `Idempotency-Key:${key}\r\n`).join('')}\r\n`
      const answer = parseResponse((await rawUntil(server.port, [head], responsesEnded(1))).text)
      return answer.status === 200 ? JSON.parse(answer.body).headers : answer.status
    }
    t.same(await bare([' k-1', ' k-2']), { 'idempotency-key': 'k-1, k-2' }, 'two keys joined, as the route with a body reads them')
    t.same(await bare([' k-1']), { 'idempotency-key': 'k-1' }, 'one key')
    t.same(await bare(['']), { 'idempotency-key': '' }, 'an empty key is sent, not absent')
    t.same(await bare([]), {}, 'no key')
  })
}
