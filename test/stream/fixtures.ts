// A raw WebSocket client of GET /events for the stream's tests (the SDK's client is tested on its own): every frame is
// checked against the published message schema and kept in order.
import { Compile } from 'typebox/compile'
import type { Address } from 'viem'
import WebSocket from 'ws'
import type { Test } from 'tap'
import type { Change } from '../../src/engine/types.ts'
import type { Logger } from '../../src/http/log.ts'
import { startServer } from '../../src/http/server.ts'
import { EventHub, type StreamLimits } from '../../src/stream/hub.ts'
import { testRoutes } from '../http/fixtures/routes.ts'
import { StreamMessage } from '../../src/stream/messages.ts'

const checkMessage = Compile(StreamMessage)

export interface RawStream {
  ws: WebSocket
  messages: any[]
  /** Frames that did not match StreamMessage (a test asserts there are none). */
  invalid: unknown[]
  closed: Promise<{ code: number; reason: string }>
  /** Resolves with the first message (already received or later) that satisfies `match`. */
  next(match: (m: any) => boolean, what: string, timeoutMs?: number): Promise<any>
  /** Resolves once `condition()` holds, checked after each message (once per message, not per message kept). */
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

export function openRawStream(baseUrl: string, token: string, query = ''): Promise<RawStream> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/events${query}`, { headers: { authorization: `Bearer ${token}` } })
  const messages: any[] = []
  const invalid: unknown[] = []
  const waiters = new Set<() => void>()
  ws.on('message', (data) => {
    const parsed = JSON.parse(String(data))
    if (!checkMessage.Check(parsed)) invalid.push(parsed)
    messages.push(parsed)
    for (const wake of [...waiters]) wake()
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
  const stream: RawStream = {
    ws,
    messages,
    invalid,
    closed,
    next(match, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(match)
          if (found === undefined) return false
          waiters.delete(check as never)
          clearTimeout(timer)
          resolve(found)
          return true
        }
        const timer = setTimeout(() => {
          waiters.delete(check as never)
          reject(new Error(`no stream message: ${what}; got ${JSON.stringify(messages.map((m) => [m.type, m.kind, m.seq]))}`))
        }, timeoutMs)
        if (!check()) waiters.add(check as never)
      })
    },
    until(condition, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!condition()) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`stream: ${what} never held (${messages.length} messages)`))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return
      ws.close(1000)
      await closed
    },
  }
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(stream))
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })))
    ws.once('error', reject)
  })
}

export const events = (s: RawStream) => s.messages.filter((m) => m.type === 'event')

/**
 * Resumes from `since` and collects what comes until `expected` events or a resync arrived, then a quiet moment (for
 * anything beyond what was expected); the stream is closed.
 */
export async function resumeStream(baseUrl: string, token: string, since: number, epoch: string, expected: number): Promise<{ events: any[]; resync: any }> {
  const stream = await openRawStream(baseUrl, token, `?since=${since}&epoch=${epoch}`)
  await stream.until(() => stream.messages.some((m) => m.type === 'resync') || events(stream).length >= expected, `${expected} resumed events or a resync`)
  await new Promise((resolve) => setTimeout(resolve, 100))
  await stream.close()
  return { events: events(stream), resync: stream.messages.find((m) => m.type === 'resync') }
}

/**
 * A connection opened on `hub` without a network: a stand-in for the uWS socket (it records every text sent and never
 * pushes back), opened through the hub's own `open` with what an upgrade would have given it.
 */
export function fakeConnection(hub: EventHub, wallet: Address, resume: { since: number; epoch: string } | undefined = undefined): string[] {
  const sent: string[] = []
  const data = { wallet, client: '127.0.0.1', tokenHash: undefined, since: resume?.since, epoch: resume?.epoch }
  const ws = { getUserData: () => data, send: (text: string) => sent.push(text), cork: (run: () => void) => run(), getBufferedAmount: () => 0, end: () => undefined }
  hub.behavior(async () => undefined).open?.(ws as never)
  return sent
}

export const tokenWallet = (token: string): Address => `0x${token.padStart(40, '0')}` as Address

/** An event of `wallet`: a job's (only what the hub routes by), about 250 bytes, or a held payment's, about 6 KB (paddedHub). */
export function sizedChange(kind: 'job' | 'held', wallet: Address, i: number): Change {
  if (kind === 'held') return { kind: 'held', id: `held_${i}`, record: { account: wallet, lender: null, network: 'test', asset: null, token: wallet, amountAtomic: BigInt(i), updatedAtMs: i }, final: false } as Change
  return { kind: 'job', id: `job_${i}`, record: { value: 'funded', context: { jobId: `job_${i}`, borrower: wallet, client: tokenWallet('c11e47') } }, final: false } as Change
}

/**
 * A hub behind a real server (uWS behind the front), whose tokens are wallets (tokenWallet) and whose held payment
 * events carry 6 KB more than their record; closed on the test's teardown.
 */
export async function startPaddedHub(t: Test, limits: Partial<StreamLimits>, endedLingerMs?: number, log?: Logger): Promise<{ url: string; hub: EventHub }> {
  const hub = new EventHub({ leaseAction: () => null, heldPayment: (record) => ({ account: record.account, padding: 'x'.repeat(6000) }) }, limits, Date.now, endedLingerMs, log)
  const server = await startServer({
    transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: () => {},
    websockets: [{ path: '/events', behavior: hub.behavior(async (token) => ({ address: tokenWallet(token), tokenHash: token })) }],
  })
  t.teardown(async () => {
    hub.close()
    await server.close(500)
  })
  return { url: `${server.url.replace(/^http/, 'ws')}/events`, hub }
}
