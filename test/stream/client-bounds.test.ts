// The event stream's bounds beyond the wallet's: wallets are free (a sign-in with a fresh key), so the 16 streams per
// wallet alone let one client open streams until the service's were gone. One client (an address, an IPv6 /64; the
// forwarded address behind a trusted proxy) holds at most connectionsPerClientMax streams of any wallets (429
// too_many_client_streams), and the service at most connectionsMax (503 streams_full); a closed stream gives its
// place back. Real sockets through the default transport (uWS behind the front); sessions are made up per token.
import t from 'tap'
import type { Address } from 'viem'
import WebSocket from 'ws'
import { startServer } from '../../src/http/server.ts'
import { EventHub } from '../../src/stream/hub.ts'
import { closed, upgrade, upgradeOnceFree, type Upgrade } from '../http/fixtures/upgrade.ts'
import { testRoutes } from '../http/fixtures/routes.ts'

const LIMITS = { connectionsPerWalletMax: 16, connectionsPerClientMax: 3, connectionsMax: 5 }

/** A wallet per token: every stream below is of a fresh wallet, as a stranger's would be. */
const walletOf = (token: string): Address => `0x${token.padStart(40, '0')}` as Address

async function start(options: { trustedProxies?: string[] } = {}): Promise<{ url: string; hub: EventHub }> {
  const hub = new EventHub({ leaseAction: () => null }, LIMITS)
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {}, ...options,
    websockets: [{ path: '/events', behavior: hub.behavior(async (token) => ({ address: walletOf(token), tokenHash: token })) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  return { url: `${server.url.replace(/^http/, 'ws')}/events`, hub }
}

let tokens = 0
/** A stream of a wallet never seen before, from `client`. */
async function stream(url: string, client: { from?: string; forwardedFor?: string }): Promise<Upgrade> {
  const headers: Record<string, string> = { authorization: `Bearer ${(++tokens).toString(16)}` }
  if (client.forwardedFor !== undefined) headers['x-forwarded-for'] = client.forwardedFor
  const opened = await upgrade(url, { ...(client.from === undefined ? {} : { from: client.from }), headers })
  t.teardown(() => opened.ws?.terminate())
  return opened
}

t.test('one client address holds at most connectionsPerClientMax streams of fresh wallets; the service at most connectionsMax', async (t) => {
  const { url, hub } = await start()
  const first = [await stream(url, { from: '127.0.0.1' }), await stream(url, { from: '127.0.0.1' }), await stream(url, { from: '127.0.0.1' })]
  t.same(first.map((u) => u.status), [101, 101, 101], 'three streams of three wallets open')
  const fourth = await stream(url, { from: '127.0.0.1' })
  t.equal(fourth.status, 429, 'a fourth wallet\'s stream from the same address is refused')
  t.equal(fourth.problem?.code, 'too_many_client_streams')

  const other = [await stream(url, { from: '127.0.0.2' }), await stream(url, { from: '127.0.0.2' })]
  t.same(other.map((u) => u.status), [101, 101], 'another address has places of its own')
  t.equal(hub.stats().connections.length, LIMITS.connectionsMax, 'the service holds its most streams')
  const full = await stream(url, { from: '127.0.0.2' })
  t.equal(full.status, 503, 'past connectionsMax a client holding nearly as many as any other is refused')
  t.equal(full.problem?.code, 'streams_full')

  await closed(first[0]!.ws!)
  const again = await upgradeOnceFree(url, { from: '127.0.0.1', headers: { authorization: `Bearer ${(++tokens).toString(16)}` } })
  t.teardown(() => again.ws?.terminate())
  t.equal(again.status, 101, 'a closed stream gives its place back')
})

/** The close code and reason `ws` gets from the service. */
function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })))
}

t.test('a full service gives a client holding fewer a place of the client holding the most: a few addresses no longer keep every other wallet out', async (t) => {
  // An outsider's finding: first come alone, connectionsMax / connectionsPerClientMax addresses (32 IPv6 /64s at the
  // defaults) held every stream and took each place freed, and an SDK lender that lost its stream (a session's end, a
  // restart) could not open it again and missed its leases. Here two stranger addresses fill the service.
  const { url, hub } = await start()
  const stranger = [await stream(url, { from: '127.0.0.1' }), await stream(url, { from: '127.0.0.1' }), await stream(url, { from: '127.0.0.1' })]
  const strangerToo = [await stream(url, { from: '127.0.0.2' }), await stream(url, { from: '127.0.0.2' })]
  t.same([...stranger, ...strangerToo].map((u) => u.status), [101, 101, 101, 101, 101], 'the strangers hold every place')
  const oldestClosed = closeOf(stranger[0]!.ws!)
  const honest = await stream(url, { from: '127.0.0.3' })
  t.equal(honest.status, 101, 'a client with no stream opens one')
  if (honest.status !== 101) return // nothing was displaced: no close to wait for
  t.match(await oldestClosed, { code: 4009, reason: /^displaced: / }, 'the oldest stream of the address holding the most gave its place')
  t.equal(hub.stats().connections.length, LIMITS.connectionsMax, 'still at most connectionsMax')
  const secondClosed = closeOf(stranger[1]!.ws!)
  t.equal((await stream(url, { from: '127.0.0.4' })).status, 101, 'another client with none opens one')
  t.match(await secondClosed, { code: 4009 })
  // Now 127.0.0.1 holds 1, 127.0.0.2 2, the honest two 1 each: no one holds two more than a stranger's address.
  for (const from of ['127.0.0.1', '127.0.0.2', '127.0.0.3']) {
    const refused = await stream(url, { from })
    t.equal(refused.problem?.code, 'streams_full', `${from} is refused: its share would pass another's`)
  }
  t.equal(honest.ws!.readyState, WebSocket.OPEN, 'the honest stream stays open')
})

t.test('behind a trusted proxy each forwarded client is counted, and an IPv6 /64 is one client', async (t) => {
  const { url } = await start({ trustedProxies: ['127.0.0.1'] })
  for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3']) {
    t.equal((await stream(url, { forwardedFor: address })).status, 101, `${address} opens`)
  }
  const sameNetwork = await stream(url, { forwardedFor: '2001:db8:1:2::4' })
  t.equal(sameNetwork.problem?.code, 'too_many_client_streams', 'a fourth address of the same /64 is the same client')
  t.equal((await stream(url, { forwardedFor: '203.0.113.9' })).status, 101, 'another forwarded client opens through the same proxy')
})
