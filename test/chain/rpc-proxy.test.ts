// The counting RPC proxy of the chain tests (test/chain/fixtures/rpc-proxy.ts), in front of a stub chain the test
// answers by hand: a setting changed while a call is in the proxy's hands does not fail that call, and a fault of the
// proxy itself fails the file that used it (close() rejects) instead of escaping as an error outside any test. The CI
// run of 053f17a failed so ('not ok 23 - Cannot mix BigInt and other types' after follower.test.ts's 22 tests):
// setLogsLag(undefined) while an eth_getLogs waited for the chain's head.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

type Call = { id: number; method: string; params: unknown[] }

/** A chain at block 0x20 whose eth_blockNumber answers are held until the test releases them; logs: none. */
async function stubChain(t: Test) {
  const calls: Call[] = []
  const heldHeads: Array<() => void> = []
  let headAsked: () => void = () => {}
  const server: Server = createServer((req, res) => {
    void (async () => {
      let body = ''
      for await (const chunk of req) body += String(chunk)
      const call = JSON.parse(body) as Call
      calls.push(call)
      const reply = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }))
      if (call.method !== 'eth_blockNumber') return reply([])
      heldHeads.push(() => reply('0x20'))
      headAsked()
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    /** Resolves once the proxy asks the chain for its head. */
    headAsked: () => new Promise<void>((resolve) => (headAsked = resolve)),
    releaseHeads: () => heldHeads.splice(0).forEach((release) => release()),
  }
}

function post(url: string, body: string): Promise<{ status: number; text: string }> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) }).then(async (answer) => ({ status: answer.status, text: await answer.text() }))
}

t.test('setLogsLag(undefined) while an eth_getLogs waits for the head: the call is answered as the node was when it came', async (t) => {
  const chain = await stubChain(t)
  const proxy = await startRpcProxy(chain.url)
  proxy.setLogsLag(2n)
  const asked = chain.headAsked()
  const answer = post(proxy.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_getLogs', params: [{ fromBlock: '0x1', toBlock: '0x40' }] }))
  await asked
  proxy.setLogsLag(undefined)
  chain.releaseHeads()
  const { status, text } = await answer
  t.equal(status, 200, 'answered')
  t.same(status === 200 ? JSON.parse(text) : text, { jsonrpc: '2.0', id: 7, result: [] }, 'with the logs')
  t.same(chain.calls.filter((call) => call.method === 'eth_getLogs').map((call) => call.params), [[{ fromBlock: '0x1', toBlock: '0x1e' }]], 'the range cut at the lagging node\'s head, 0x20 - 2')
  await t.resolves(proxy.close(), 'no fault of the proxy')
})

t.test('a fault of the proxy itself: the call is answered 500, and close() rejects naming it', async (t) => {
  const chain = await stubChain(t)
  const proxy = await startRpcProxy(chain.url)
  const { status, text } = await post(proxy.url, 'not json')
  t.equal(status, 500, 'answered 500, not left hanging')
  t.match(text, /rpc proxy failed: SyntaxError/)
  await t.rejects(proxy.close(), /the rpc proxy failed on 1 call\(s\).*SyntaxError/s, 'close() fails the file that used the proxy')
})

t.test('the chain failing a call the proxy makes of its own is answered 502, as a forwarded call it fails; no fault', async (t) => {
  const chain = await stubChain(t)
  const proxy = await startRpcProxy(chain.url)
  proxy.setLogsLag(2n)
  // The chain gone: the proxy's own eth_blockNumber fails.
  proxy.setTarget('http://127.0.0.1:1')
  const { status } = await post(proxy.url, JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'eth_getLogs', params: [{ fromBlock: '0x1', toBlock: '0x2' }] }))
  t.equal(status, 502, 'upstream failed')
  await t.resolves(proxy.close(), 'no fault of the proxy')
})
