// The pollers' JSON-RPC transport against a scripted HTTP server: results through viem's client, calls on one
// kept-alive connection, a connection the server dropped while idle retried once on a new one, and each failure as
// viem's error of its kind (RPC error, HTTP error, deadline, oversized answer); and the head its two pollers share.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { BaseError, createPublicClient, HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError } from 'viem'
import { createPollingClients, pollTransport, SharedHead } from '../../src/chain/poll-transport.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'

type Handler = (call: { method: string; id: number }, req: IncomingMessage, res: ServerResponse) => void

/** A server whose answer to each call `handler` writes; counts connections and calls. */
async function scripted(t: Test, handler: Handler) {
  let connections = 0
  let calls = 0
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    calls++
    handler(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method: string; id: number }, req, res)
  })
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, connections: () => connections, calls: () => calls }
}

const answer = (res: ServerResponse, id: number, body: Record<string, unknown>, status = 200) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, ...body }))

const clientOf = (url: string, timeoutMs = 5_000, responseBytesMax?: number) =>
  createPublicClient({ transport: pollTransport(url, { timeoutMs, ...(responseBytesMax === undefined ? {} : { responseBytesMax }) }) })

/** The first error of `kind` in viem's cause chain. */
function causeOf<E>(error: unknown, kind: abstract new (...args: never[]) => E): E | undefined {
  const found = error instanceof BaseError ? error.walk((e) => e instanceof kind) : error instanceof kind ? error : undefined
  return found instanceof kind ? found : undefined
}

t.test('results reach viem, and successive calls share one kept-alive connection', async (t) => {
  const server = await scripted(t, (call, _req, res) => answer(res, call.id, { result: '0x2a' }))
  const client = clientOf(server.url)
  for (let i = 0; i < 10; i++) t.equal(await client.getBlockNumber({ cacheTime: 0 }), 42n)
  t.equal(server.calls(), 10)
  t.equal(server.connections(), 1, 'one connection for ten calls')
})

t.test('concurrent calls (a multicall\'s chunks) are all sent at once, none queued behind a socket cap', async (t) => {
  const waiting: Array<() => void> = []
  const concurrent = 24
  // Answers nothing until every call has arrived: a transport that holds some back would time out.
  const server = await scripted(t, (call, _req, res) => {
    waiting.push(() => answer(res, call.id, { result: '0x1' }))
    if (waiting.length === concurrent) for (const release of waiting) release()
  })
  const client = clientOf(server.url, 5_000)
  // Distinct calls: viem would share one request among identical concurrent ones.
  const results = await Promise.all(Array.from({ length: concurrent }, (_, i) => client.request({ method: 'eth_getBalance', params: [`0x${i.toString(16).padStart(40, '0')}`, 'latest'] })))
  t.same(results, Array.from({ length: concurrent }, () => '0x1'))
})

t.test('a kept-alive connection dropped by the server is retried once on a new connection', async (t) => {
  let served = 0
  const server = await scripted(t, (call, req, res) => {
    served++
    // The second call arrives on the kept-alive connection: drop it without an answer, as a server that closed it.
    if (served === 2) req.socket.destroy()
    else answer(res, call.id, { result: '0x7' })
  })
  const client = clientOf(server.url)
  t.equal(await client.getBlockNumber({ cacheTime: 0 }), 7n)
  t.equal(await client.getBlockNumber({ cacheTime: 0 }), 7n, 'answered on the retry')
  t.equal(server.calls(), 3)
  t.equal(server.connections(), 2)
})

t.test('a connection dropped on its first use is not retried', async (t) => {
  const server = await scripted(t, (_call, req) => req.socket.destroy())
  const error = await clientOf(server.url).getBlockNumber({ cacheTime: 0 }).catch((e: unknown) => e)
  t.ok(causeOf(error, HttpRequestError), `an HttpRequestError: ${String(error)}`)
  t.equal(server.calls(), 1)
})

t.test('a JSON-RPC error is viem\'s RPC error with its code', async (t) => {
  const server = await scripted(t, (call, _req, res) => answer(res, call.id, { error: { code: -32_005, message: 'limit exceeded' } }))
  const error = await clientOf(server.url).getBlockNumber({ cacheTime: 0 }).catch((e: unknown) => e)
  t.equal(causeOf(error, RpcRequestError)?.code, -32_005, String(error))
})

t.test('an HTTP error without a JSON-RPC body is an HttpRequestError with its status', async (t) => {
  const server = await scripted(t, (_call, _req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('rpc down'))
  const error = await clientOf(server.url).getBlockNumber({ cacheTime: 0 }).catch((e: unknown) => e)
  t.equal(causeOf(error, HttpRequestError)?.status, 503, String(error))
})

t.test('a call past its deadline fails with viem\'s TimeoutError, and is not sent again', async (t) => {
  let calls = 0
  const server = await scripted(t, (call, _req, res) => {
    calls++
    // The first call on the connection is answered, so that the next one goes on a reused connection.
    if (calls === 1) answer(res, call.id, { result: '0x1' })
  })
  const client = clientOf(server.url, 100)
  t.equal(await client.getBlockNumber({ cacheTime: 0 }), 1n)
  const error = await client.request({ method: 'eth_chainId' }).catch((e: unknown) => e)
  t.ok(causeOf(error, TimeoutError), `a TimeoutError: ${String(error)}`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(server.calls(), 2, 'the call that timed out was sent once')
})

t.test('the calls observer is told of each call sent and settled, answered or failed', async (t) => {
  const server = await scripted(t, (call, _req, res) => answer(res, call.id, call.method === 'eth_chainId' ? { result: '0x7a69' } : { error: { code: -32601, message: 'method not found' } }))
  const told: string[] = []
  const calls = { started: () => void told.push('started'), settled: () => void told.push('settled') }
  const network = { slug: 'scripted', chainId: 31337, rpcUrl: server.url, pollingIntervalMs: 50 } as NetworkConfig
  const client = createPollingClients(network, { timeoutMs: 5_000, calls }).publicClient
  t.equal(await client.request({ method: 'eth_chainId' }), '0x7a69')
  await t.rejects(client.request({ method: 'eth_gasPrice' }))
  await new Promise((resolve) => setImmediate(resolve))
  t.same(told, ['started', 'settled', 'started', 'settled'], 'one start and one settlement per call')
})

t.test('an answer over the size limit is refused', async (t) => {
  const server = await scripted(t, (call, _req, res) => answer(res, call.id, { result: `0x${'0'.repeat(2_000)}1` }))
  const error = await clientOf(server.url, 5_000, 1_000).getBlockNumber({ cacheTime: 0 }).catch((e: unknown) => e)
  t.ok(causeOf(error, ResponseBodyTooLargeError), `a ResponseBodyTooLargeError: ${String(error)}`)
})

t.test('a shared head: a read begun after the named time is reused or joined, an older one is not, a failed one never', async (t) => {
  let block = 0
  let failNext = false
  const server = await scripted(t, (call, _req, res) => {
    if (call.method !== 'eth_getBlockByNumber') return answer(res, call.id, { error: { code: -32601, message: 'method not found' } })
    if (failNext) {
      failNext = false
      return answer(res, call.id, { error: { code: -32000, message: 'unavailable' } })
    }
    block++
    answer(res, call.id, { result: { number: `0x${block.toString(16)}`, hash: `0x${block.toString(16).padStart(64, '0')}`, timestamp: '0x1' } })
  })
  const network = { slug: 'scripted', chainId: 31337, rpcUrl: server.url, pollingIntervalMs: 50 } as NetworkConfig
  const head = new SharedHead(createPollingClients(network, { timeoutMs: 5_000 }))
  const window = () => head.nowMs() - 60_000

  const [first, joined] = await Promise.all([head.latest(window()), head.latest(window())])
  t.same(first, { number: 1n, hash: `0x${'1'.padStart(64, '0')}`, timeMs: 1_000 }, 'the number, hash and time of the latest block')
  t.equal(joined, first, 'a read in flight is joined')
  t.equal(await head.latest(window()), first, 'a read begun within the window is reused')
  t.equal(server.calls(), 1, 'one call for three polls')

  // A poll that names a time after the last read began (the watcher after an invalidation) gets a new read.
  const afterIt = head.nowMs()
  t.equal((await head.latest(afterIt)).number, 2n, 'read anew')
  t.equal(server.calls(), 2)

  failNext = true
  await t.rejects(head.latest(head.nowMs()), 'a failed read rejects its poll')
  t.equal((await head.latest(window())).number, 3n, 'and is not reused: the next poll reads again')
  t.equal(server.calls(), 4)
})
