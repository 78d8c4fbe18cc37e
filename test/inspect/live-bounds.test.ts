// The inspector's live feed is public when enabled (on by default on the devnet) and had one bound, over every
// client: one stranger opening 32 WebSockets locked every operator out. One client (an address, an IPv6 /64; the
// forwarded address behind a trusted proxy) now holds at most watchersPerClientMax feeds, under the global
// watchersMax (429 too_many_watchers past either); a closed feed gives its place back. Real sockets, a real store.
import t from 'tap'
import { startServer } from '../../src/http/server.ts'
import { Inspector } from '../../src/inspect/inspector.ts'
import { INSPECT_LIVE_LIMITS, INSPECT_LIVE_PATH, InspectorLive } from '../../src/inspect/live.ts'
import { closed, upgrade, upgradeOnceFree, type Upgrade } from '../http/fixtures/upgrade.ts'
import { testRoutes } from '../http/fixtures/routes.ts'
import type { Logger, LogLine } from '../../src/http/log.ts'
import { freshStore } from '../store/fixtures/helpers.ts'

const LIMITS = { ...INSPECT_LIVE_LIMITS, watchersMax: 4, watchersPerClientMax: 2 }

async function start(options: { trustedProxies?: string[]; log?: Logger } = {}): Promise<string> {
  const { store } = await freshStore(t)
  const live = new InspectorLive(new Inspector(store), LIMITS)
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {}, ...options,
    websockets: [{ path: INSPECT_LIVE_PATH, behavior: live.behavior() }],
  })
  t.teardown(async () => {
    live.close()
    await server.close(500)
  })
  return `${server.url.replace(/^http/, 'ws')}${INSPECT_LIVE_PATH}`
}

async function watch(url: string, options: { from?: string; headers?: Record<string, string> }): Promise<Upgrade> {
  const opened = await upgrade(url, options)
  t.teardown(() => opened.ws?.terminate())
  return opened
}

t.test('one client address holds at most watchersPerClientMax feeds, so others still get one; the global bound stays', async (t) => {
  const logged: LogLine[] = []
  const url = await start({ log: (line) => logged.push(line) })
  const stranger = [await watch(url, { from: '127.0.0.1' }), await watch(url, { from: '127.0.0.1', headers: { 'x-request-id': 'review36-feed' } })]
  t.same(stranger.map((u) => u.status), [101, 101])
  t.match(logged.filter((line) => line.requestId === 'review36-feed'), [{ msg: 'request', status: 101 }], 'an opened feed is logged, one request line (review36)')
  const third = await watch(url, { from: '127.0.0.1' })
  t.equal(third.status, 429, 'a third feed from the same address is refused')
  t.equal(third.problem?.code, 'too_many_watchers')
  t.match(third.problem?.detail, /client address/, 'saying the bound is the client\'s')
  t.match(third.headers['x-request-id'], /^\S+$/, 'with X-Request-Id, as every answer (the pipeline answers it: edges30)')
  t.equal(third.headers['content-type'], 'application/problem+json')

  const operator = [await watch(url, { from: '127.0.0.2' }), await watch(url, { from: '127.0.0.2' })]
  t.same(operator.map((u) => u.status), [101, 101], 'another address still opens its feeds')
  const past = await watch(url, { from: '127.0.0.2' })
  t.equal(past.status, 429, 'past watchersMax a client holding as many as any other is refused')
  t.equal(past.problem?.code, 'too_many_watchers')

  // An outsider's finding: first come alone, watchersMax / watchersPerClientMax addresses (8 at the defaults) kept
  // every other feed out. Now a client with none takes the place of the oldest feed of the address holding the most.
  const displaced = new Promise<number>((resolve) => stranger[0]!.ws!.once('close', (code) => resolve(code)))
  const newcomer = await watch(url, { from: '127.0.0.3' })
  t.equal(newcomer.status, 101, 'a client with no feed gets one while all are open')
  if (newcomer.status === 101) t.equal(await displaced, 4009, 'the oldest feed of the address holding the most gave its place')
  const fourth = await watch(url, { from: '127.0.0.4' })
  t.equal(fourth.status, 101, 'so does the next')
  t.equal((await watch(url, { from: '127.0.0.1' })).problem?.code, 'too_many_watchers', 'now nobody holds two more than anyone: refused')

  await closed(stranger[1]!.ws!)
  const again = await upgradeOnceFree(url, { from: '127.0.0.1' })
  t.teardown(() => again.ws?.terminate())
  t.equal(again.status, 101, 'a closed feed gives its place back')
})

t.test('behind a trusted proxy each forwarded client is counted, and an IPv6 /64 is one client', async (t) => {
  const url = await start({ trustedProxies: ['127.0.0.1'] })
  t.equal((await watch(url, { headers: { 'x-forwarded-for': '2001:db8::1' } })).status, 101)
  t.equal((await watch(url, { headers: { 'x-forwarded-for': '2001:db8::2' } })).status, 101)
  t.equal((await watch(url, { headers: { 'x-forwarded-for': '2001:db8::3' } })).status, 429, 'a third address of the same /64 is the same client')
  t.equal((await watch(url, { headers: { 'x-forwarded-for': '203.0.113.9' } })).status, 101, 'another forwarded client opens through the same proxy')
})
