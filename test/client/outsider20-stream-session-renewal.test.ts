// The SDK's event stream against the service closing a stream at its session's expiry (4001 session_ended; see
// test/stream/outsider20-session-expiry.test.ts). An agent that only streams (a lender waiting for leases) made no
// other call, so its session was never renewed and its stream was closed at the session's end, then it signed in again
// (a sign-in charged to the service's buckets, refused to a wallet without standing while strangers hold them empty).
// Now the SDK's stream renews its session in place (the same token) while it is open, and stays open.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { AgentCredit } from '../../src/client/sdk.ts'
import { startHarness, type Harness } from '../fixtures/service.ts'

const SESSION_TTL_SECONDS = 2

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { sessionTtlSeconds: SESSION_TTL_SECONDS } })
})
t.teardown(() => h?.stop())

t.test('an SDK stream keeps its session alive and stays open past its first expiry', async (t) => {
  const agent = new AgentCredit({ baseUrl: h.url, account: privateKeyToAccount(generatePrivateKey()), renewBeforeMs: 1_500 })
  const stream = await agent.events(undefined, { sessionRenewIntervalMs: 200 })
  const firstExpiry = Date.parse(agent.http.lastSession?.expiresAt as string)
  const token = agent.http.lastSession?.token
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (Date.now() <= firstExpiry + 2_000 && stream.lastClose === undefined) return
      clearInterval(timer)
      resolve()
    }, 100)
  })
  t.same(stream.lastClose, undefined, 'the stream was never closed')
  t.equal(await agent.token(), token, 'the same session, refreshed in place')
  stream.close()
})
