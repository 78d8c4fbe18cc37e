// The SDK's EventStream when a connection closes before the service's hello (a proxy or load balancer dropping it, a
// session ended between the upgrade and the hello): the first connection's ready() rejects with the close (and `ended`
// resolves with it), and a reconnection that closes so is tried again, rather than the stream waiting for ever with no
// socket. The server is a bare WebSocket server standing for the network path that drops connections; a connection
// it keeps is answered as the service does (a hello, then an event with the next sequence number).
import t, { type Test } from 'tap'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { WebSocketServer, type WebSocket } from 'ws'
import { EventStream, type StreamEvent } from '../../src/client/stream.ts'

const EPOCH = 'e1'
const WALLET = '0x00000000000000000000000000000000000000aa'

async function flakyServer(t: Test) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await once(wss, 'listening')
  const state = { connections: 0, dropsLeft: 0, seq: 0 }
  wss.on('connection', (ws: WebSocket) => {
    state.connections += 1
    if (state.dropsLeft > 0) {
      state.dropsLeft -= 1
      ws.close(1011, 'dropped')
      return
    }
    ws.send(JSON.stringify({ type: 'hello', epoch: EPOCH, wallet: WALLET, seq: state.seq }))
    state.seq += 1
    ws.send(JSON.stringify({ type: 'event', epoch: EPOCH, seq: state.seq, kind: 'probe' }))
  })
  t.teardown(() => new Promise<void>((resolve) => {
    for (const client of wss.clients) client.terminate()
    wss.close(() => resolve())
  }))
  return {
    url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    state,
    /** Closes every open connection, as a restart of the path would. */
    dropOpen: () => {
      for (const client of wss.clients) client.close(1001, 'going away')
    },
  }
}

/** `promise`, or a rejection naming `what` after `ms`: a promise that never settles fails the test instead of hanging it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

const eventCount = (events: StreamEvent[], count: number) =>
  new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (events.length >= count) {
        clearInterval(check)
        resolve()
      }
    }, 5).unref()
  })

t.test('a first connection closed before its hello rejects ready() with the close', async (t) => {
  const server = await flakyServer(t)
  server.state.dropsLeft = 1
  const stream = new EventStream({ baseUrl: server.url, token: async () => 'token' })
  t.teardown(() => stream.close())
  await t.rejects(within(stream.ready(), 5_000, 'ready()'), /closed before its hello: 1011 dropped/)
  t.equal(stream.lastClose?.code, 1011)
  t.match(await within(stream.ended, 5_000, 'ended'), { message: /closed before its hello: 1011 dropped/ }, 'the stream has ended, for that reason: nothing tries it again')
})

t.test('a reconnection closed before its hello is tried again until one opens', async (t) => {
  const server = await flakyServer(t)
  const stream = new EventStream({ baseUrl: server.url, token: async () => 'token', reconnectDelayMs: 20 })
  t.teardown(() => stream.close())
  const events: StreamEvent[] = []
  stream.on((message) => {
    if (message.type === 'event') events.push(message)
  })
  await stream.ready()
  await within(eventCount(events, 1), 5_000, 'the first event')
  // The open connection drops; the next two attempts close before their hello; the fourth connection opens.
  server.state.dropsLeft = 2
  server.dropOpen()
  await within(eventCount(events, 2), 5_000, 'the event after the reconnections')
  t.equal(server.state.connections, 4, 'one connection, two dropped before their hello, one that opened')
  t.same(events.map((e) => e.seq), [1, 2], 'each event once, in order')
})
