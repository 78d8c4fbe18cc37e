// review22: a client that sends its request and its FIN together (shutdown of its writing side, `nc -N`) gets its
// answer through the front, as from uWS on the port: the front's server ended its own side at the client's FIN
// (Node's allowHalfOpen false), so the answer was lost and the client saw the connection close empty.
import { connect } from 'node:net'
import t from 'tap'
import Type from 'typebox'
import { StrictObject } from '../../src/api/common.ts'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'

const ping = defineRoute({
  method: 'get', path: '/ping', operationId: 'ping', callers: 'any caller (a test route)', summary: 'pong', auth: 'none',
  responses: { 200: { description: 'pong', schema: StrictObject({ pong: Type.Boolean() }) } },
  handler: () => ({ status: 200, body: { pong: true } }),
})

/** Sends `request` with its FIN and reads until the server closes. */
function halfClosed(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
    socket.on('error', () => socket.destroy())
    socket.on('close', () => resolve(text))
    socket.on('connect', () => socket.end(request))
  })
}

for (const legacyClients of [true, false]) {
  t.test(`a request sent with its FIN is answered (${legacyClients ? 'the front' : 'uWS on the port'})`, async (t) => {
    const server = await startServer({ routes: [ping], port: 0, bodyLimitBytes: 64, rateLimit: false, log: () => {}, authenticate: async () => undefined, legacyClients })
    t.teardown(() => server.close(500))
    t.match(await halfClosed(server.port, 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 200 [^]*\{"pong":true\}$/, 'HTTP/1.1')
    if (legacyClients) t.match(await halfClosed(server.port, 'GET /ping HTTP/1.0\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 200 [^]*\{"pong":true\}$/, 'HTTP/1.0')
    t.match(await halfClosed(server.port, 'GET /ping HTTP/1.1\r\nHost: x\r\n'), /^$|^HTTP\/1\.1 4/, 'a FIN before the head ends: closed, at once or with a 400')
  })
}
