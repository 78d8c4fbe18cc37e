// The JSON-RPC transport of the chain's pollers (the follower and the wallet watcher), which call the RPC all the time,
// also with no request to serve (a devnet polls every 50 ms). viem's http transport builds, for every call, a fetch
// Request, its web streams, an AbortController and a TimeoutError with its stack: 650-1,000 µs of CPU per call against
// anvil, measured (issue 11), which made the idle pollers about a tenth of a core on the service thread. This one posts
// over node:http(s) on a keep-alive connection and builds an error only when a call fails: 170-300 µs per call.
// The request path keeps viem's transport (clients.ts): it calls the chain once per proof, not 20 times a second.
// Unlike fetch, it follows no redirect (an RPC URL that redirects fails as an HTTP error) and asks for no compression.
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http'
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https'
import { createPublicClient, custom, HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError, type Chain, type Hex, type PublicClient, type Transport } from 'viem'
import { networkChain, noteBlockGasLimit } from './clients.ts'
import type { NetworkConfig } from './config.ts'

/** The largest answer read (eth_getLogs over a range can be large): viem's own default. */
export const pollResponseBytesMax = 10 * 1024 * 1024

export type PollTransportOptions = {
  /** Deadline of one call: it fails with viem's TimeoutError after it. */
  timeoutMs: number
  responseBytesMax?: number
  /** Told as each call is sent and as it settles (answered or failed): the follower's measure of a stalled RPC. */
  calls?: CallObserver
}

/** See PollTransportOptions.calls. */
export type CallObserver = { started(): void; settled(): void }

type RpcAnswer = { result?: unknown; error?: { code: number; message: string; data?: unknown } }

/** A viem transport that posts each call on one of a few kept-alive connections to `url`. */
export function pollTransport(url: string, options: PollTransportOptions): Transport {
  const target = new URL(url)
  const secure = target.protocol === 'https:'
  const send = secure ? httpsRequest : httpRequest
  // No cap on sockets: viem sends a multicall's chunks at once (the watcher re-reading hundreds of holders), and a call
  // queued behind a cap would spend its deadline waiting for a socket. A poll alone reuses one connection.
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true })
  const responseBytesMax = options.responseBytesMax ?? pollResponseBytesMax
  const observer = options.calls
  let id = 0
  const call = (method: string, params: unknown): Promise<unknown> => {
    const body = { jsonrpc: '2.0', id: ++id, method, params: params ?? [] }
    const answer = post(body, JSON.stringify(body), true)
    if (observer === undefined) return answer
    observer.started()
    answer.then(observer.settled, observer.settled)
    return answer
  }
  const post = (body: Record<string, unknown>, text: string, firstAttempt: boolean): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const req = send(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
        read(res, responseBytesMax).then((answer) => {
          clearTimeout(timer)
          let parsed: RpcAnswer
          try {
            parsed = JSON.parse(answer) as RpcAnswer
          } catch {
            reject(new HttpRequestError({ body, url, status: res.statusCode, details: answer.slice(0, 200) }))
            return
          }
          if (parsed.error !== undefined) reject(new RpcRequestError({ body, error: parsed.error, url }))
          else if (res.statusCode !== 200) reject(new HttpRequestError({ body, url, status: res.statusCode, details: answer.slice(0, 200) }))
          else resolve(parsed.result)
        }, (error: unknown) => {
          clearTimeout(timer)
          reject(error instanceof ResponseBodyTooLargeError ? error : new HttpRequestError({ body, url, cause: error as Error }))
        })
      })
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        req.destroy()
        reject(new TimeoutError({ body, url }))
      }, options.timeoutMs)
      req.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        // The destroy of a call past its deadline: already answered with the TimeoutError, never retried.
        if (timedOut) return
        // A kept-alive connection the server closed while idle fails as it is reused, before any answer: the call goes
        // once more on a new connection (Node's documented pattern; the pollers only read, so a call twice is harmless).
        if (firstAttempt && req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) post(body, text, false).then(resolve, reject)
        else reject(new HttpRequestError({ body, url, cause: error }))
      })
      req.end(text)
    })
  return custom({ request: ({ method, params }) => call(method, params) }, { retryCount: 0 })
}

/** The answer's text; rejects once it grows past `limit` bytes (the connection is dropped). */
function read(res: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    res.on('data', (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > limit) {
        res.destroy()
        reject(new ResponseBodyTooLargeError({ maxSize: limit, size }))
        return
      }
      chunks.push(chunk)
    })
    res.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8')))
    res.on('error', reject)
  })
}

/** What a poller needs of a network: the network and a public client on the polling transport. */
export type PollingClients = { network: NetworkConfig; chain: Chain; publicClient: PublicClient<Transport, Chain> }

export function createPollingClients(network: NetworkConfig, options: PollTransportOptions): PollingClients {
  const chain = networkChain(network)
  return { network, chain, publicClient: createPublicClient({ chain, transport: pollTransport(network.rpcUrl, options), pollingInterval: network.pollingIntervalMs }) }
}

/** The chain's head as the pollers use it; timeMs: its block's timestamp (ms), whether the chain still moves. */
export type ChainHead = { number: bigint; hash: Hex; timeMs: number }

/**
 * The head of one network, read for both of its pollers (the follower and the wallet watcher): each poll asks for a
 * head whose read began after a time it names, and gets the read in flight or the last one when it qualifies, a new
 * read otherwise. Two pollers reading the head on their own were two calls every `pollingIntervalMs` with nothing
 * to do (a devnet polls every 50 ms: 40 calls a second of the idle service's CPU, issue 11); the head is read as the
 * raw block (number and hash only), without viem's formatting of every field.
 *
 * It hands each head as read, also one lower than an earlier one (a node of the provider lagging the others, two
 * reads answered out of order), rather than the highest seen: a lower head is the only sign of a chain replaced
 * below the pollers (a devnet restarted without its state) until it grows past them again, and a substitute read
 * earlier would break the watcher's rule that a poll takes a head read after its last invalidation. The pollers
 * cope: the watcher reads its holders afresh, the follower waits (src/chain/follower.ts, ChainBehindError).
 */
export class SharedHead {
  readonly #clients: PollingClients
  #last: { startedAtMs: number; head: Promise<ChainHead> } | undefined

  constructor(clients: PollingClients) {
    this.#clients = clients
  }

  /** This reader's clock (ms): the time a poller names is read from it. */
  nowMs(): number {
    return performance.now()
  }

  /** A head whose read began after `notBeforeMs` (this reader's clock): the last or current read, or a new one. */
  latest(notBeforeMs: number): Promise<ChainHead> {
    const last = this.#last
    if (last !== undefined && last.startedAtMs > notBeforeMs) return last.head
    const entry = { startedAtMs: this.nowMs(), head: readHead(this.#clients) }
    this.#last = entry
    // A failed read is nobody's head: the next poll reads again.
    entry.head.catch(() => {
      if (this.#last === entry) this.#last = undefined
    })
    return entry.head
  }
}

/** The head's block, whose gas limit the senders' cap takes too (noteBlockGasLimit: no read of their own). */
async function readHead({ network, publicClient }: PollingClients): Promise<ChainHead> {
  const block = (await publicClient.request({ method: 'eth_getBlockByNumber', params: ['latest', false] })) as { number?: unknown; hash?: unknown; timestamp?: unknown; gasLimit?: unknown } | null
  if (typeof block?.number !== 'string' || typeof block.hash !== 'string' || typeof block.timestamp !== 'string') throw new Error('eth_getBlockByNumber(latest) answered no block')
  // A gas limit that is no hex quantity is not noted (the sender reads its own), and never fails the head's read.
  if (typeof block.gasLimit === 'string' && /^0x[0-9a-f]{1,64}$/i.test(block.gasLimit)) noteBlockGasLimit(network, BigInt(block.gasLimit))
  return { number: BigInt(block.number), hash: block.hash as Hex, timeMs: Number(block.timestamp) * 1000 }
}

/** One SharedHead per network, by slug, for the pollers of one service. */
export function sharedHeads(networks: readonly NetworkConfig[], options: PollTransportOptions): Map<string, SharedHead> {
  return new Map(networks.map((network) => [network.slug, new SharedHead(createPollingClients(network, options))]))
}
