// An outsider against the event stream's tie to its session (README "Live event stream": "A stream ends with its
// session"). Revocation closed a stream at once, but expiry did not: a stream opened before its session expired
// (24 h, or the signed message's expirationTime) kept receiving the wallet's events for as long as the connection
// lived, past the expiry the wallet signed and past the week a refresh may reach; and once the session had expired,
// not even DELETE /auth/sessions of the wallet's new session could close it (it lists live sessions only). What it
// cost: one leaked bearer token and one WebSocket, opened before the token's end. Now the stream is closed 4001
// session_ended at its session's expiry, and a session refreshed in place (same token) keeps its streams open.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { CreditClient } from '../../src/client/client.ts'
import { signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { openRawStream, type RawStream } from './fixtures.ts'

const SESSION_TTL_SECONDS = 2

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { sessionTtlSeconds: SESSION_TTL_SECONDS } })
})
t.teardown(() => h?.stop())

/** Resolves with the stream's close, or 'open' once `give` holds (checked every 100 ms) and it is still open. */
function closedOr(stream: RawStream, give: () => boolean): Promise<{ code: number; reason: string } | 'open'> {
  return Promise.race([stream.closed, new Promise<'open'>((resolve) => {
    const timer = setInterval(() => {
      if (!give()) return
      clearInterval(timer)
      resolve('open')
    }, 100)
  })])
}

/** Waits until the service refuses `token` over HTTP (its session expired). */
async function untilRefused(client: CreditClient, token: string): Promise<void> {
  for (;;) {
    const reply = await client.get('/events', { token })
    if (reply.status === 401) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('a stream closes when its session expires (the message\'s expirationTime)', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(h.url)
  const nonce = await client.get('/auth/nonce')
  const message = createSiweMessage({
    domain: nonce.body.domain, address: account.address, uri: `${h.url}/`, version: '1', chainId: nonce.body.chainIds[0],
    nonce: nonce.body.nonce, issuedAt: new Date(), expirationTime: new Date(Date.now() + 1_500),
  })
  const session = await client.post('/auth/session', { message, signature: await account.signMessage({ message }) })
  t.equal(session.status, 201)
  const token = session.body.token as string
  const stream = await openRawStream(h.url, token)
  await untilRefused(client, token)
  let waited = false
  setTimeout(() => (waited = true), 15_000).unref()
  const closed = await closedOr(stream, () => waited)
  t.not(closed, 'open', 'the stream of an expired session is closed')
  if (closed !== 'open') {
    t.equal(closed.code, 4001)
    t.match(closed.reason, /^session_ended: /)
  }
  await stream.close()
})

t.test('a session refreshed in place keeps its stream open past its first expiry, and closes it at its end', async (t) => {
  const client = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const token = client.token as string
  const firstExpiry = Date.parse(client.lastSession?.expiresAt as string)
  const stream = await openRawStream(h.url, token)
  let lastRefresh = firstExpiry
  const refreshing = setInterval(() => void client.refresh(token).then((at) => at !== undefined && (lastRefresh = at)), 500)
  const kept = await closedOr(stream, () => Date.now() > firstExpiry + 1_000)
  clearInterval(refreshing)
  t.equal(kept, 'open', 'refreshed (the same token), the stream stays open past the session\'s first expiry')
  t.ok(lastRefresh > firstExpiry, 'the refreshes extended the session')
  let waited = false
  setTimeout(() => (waited = true), 15_000).unref()
  const closed = await closedOr(stream, () => waited)
  t.not(closed, 'open', 'closed once the refreshed session expired')
  if (closed !== 'open') t.equal(closed.code, 4001)
  await stream.close()
})
