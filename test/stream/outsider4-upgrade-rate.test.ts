// An outsider against the rate limit: every request is counted (README "Rate limits": a request with a valid bearer
// token on its wallet, whatever the route; any other on its client address), and a WebSocket upgrade is a request.
// Upgrades of GET /events were served past an empty bucket, so a wallet (or a stranger with made-up tokens) could
// open and close streams, each with its hello and resume, as fast as it could send them.
import t from 'tap'
import WebSocket from 'ws'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import { signedIn, startHarness, type Harness } from '../fixtures/service.ts'

const PER_SECOND = 2
const TRIES = 12

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { rateLimitPerSecond: PER_SECOND } })
})
t.teardown(() => h.stop())

let lastRefusal: { contentType: string | undefined; retryAfter: string | undefined } | undefined

/** The HTTP status of an upgrade of GET /events with `token` (101 when it opened; closed again at once). */
function upgradeStatus(token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}/events`, { headers: { authorization: `Bearer ${token}` } })
    ws.on('upgrade', () => {
      ws.close(1000)
      resolve(101)
    })
    ws.on('unexpected-response', (req, res) => {
      lastRefusal = { contentType: res.headers['content-type'], retryAfter: res.headers['retry-after'] as string | undefined }
      req.destroy()
      resolve(res.statusCode ?? 0)
    })
    ws.on('error', (error) => reject(error))
  })
}

t.test('upgrades of GET /events beyond the bucket are refused 429, per wallet and per address', async (t) => {
  const client = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const statuses: number[] = []
  for (let i = 0; i < TRIES; i++) statuses.push(await upgradeStatus(client.token as string))
  t.ok(statuses.includes(429), `a signed-in wallet's upgrades past its burst are refused (${statuses.join(', ')})`)
  const strangers: number[] = []
  for (let i = 0; i < TRIES; i++) strangers.push(await upgradeStatus(`made-up-${i}`))
  t.ok(strangers.includes(429), `made-up tokens spend the address's bucket (${strangers.join(', ')})`)
  t.equal(lastRefusal?.contentType, 'application/problem+json', 'a refusal is problem+json')
  t.match(lastRefusal?.retryAfter, /^[0-9]+$/, 'with Retry-After')
})
