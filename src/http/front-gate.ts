// One request at a time to uWS on a passed HTTP/1.1 connection. The pinned uWebSockets.js build closes a connection,
// with nothing written, when it parses a pipelined request while the answer before it is still pending (an async
// handler: every read waits for the store's durability barrier, every write for its commit; upstream issues
// uNetworking/uWebSockets.js#277 and #1301, "wontfix"). RFC 9112 section 9.3.2 lets a server answer pipelined requests
// in order, and clients that pipeline expect that. So the front holds each request behind the one uWS is answering:
// it forwards a request's head and body, then waits until the answer's last byte has gone to the client before it
// forwards the next. Framing is read from Content-Length on both sides (uWS always writes it on a whole answer; HEAD,
// 204, 304 and 1xx answers carry no body). Anything the gate does not frame itself (a chunked or ambiguous request
// body, an Upgrade to WebSocket, a chunked or close-delimited answer, an answer head past its limit) ends the gate: from then
// on bytes are copied both ways as they come, as without the gate, and uWS's own rules apply. A request head longer
// than uWS takes whole (front.ts UPSTREAM_HEAD_MAX_BYTES) is answered 431 by the gate, which ends the connection.
import type { Socket } from 'node:net'

const CRLF2 = Buffer.from('\r\n\r\n')
const EMPTY = Buffer.alloc(0)
/** Bytes of held-back requests the gate keeps before it stops reading the client (TCP pushes back on the client). */
const HELD_LIMIT_BYTES = 256 * 1024
/** An answer head not whole by this length is not framed by the gate (uWS's heads are far shorter). */
const ANSWER_HEAD_LIMIT_BYTES = 16 * 1024
/** framingAt: the head declares no body length (and nothing that stops the gate). */
export const NO_LENGTH = -1
/** framingAt: two Content-Lengths, a Transfer-Encoding, an Upgrade, or a length that is not a decimal: the gate lets go. */
export const UNFRAMED = -2

/** The byte at `at` as a lower-case ASCII letter when it is an upper-case one. */
const lower = (byte: number): number => (byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte)
/** White space as String.prototype.trim sees it in a latin1 string (tab, LF, VT, FF, CR, space, no-break space). */
const isTrimmed = (byte: number): boolean => (byte >= 0x09 && byte <= 0x0d) || byte === 0x20 || byte === 0xa0

/** Where the value of the field named `name` (lower case) at `at` starts (past `[ \t]*:`), or -1 when it is not that field. */
function fieldValueAt(bytes: Uint8Array, at: number, end: number, name: string): number {
  if (at + name.length > end) return -1
  for (let i = 0; i < name.length; i++) if (lower(bytes[at + i] as number) !== name.charCodeAt(i)) return -1
  let i = at + name.length
  while (i < end && (bytes[i] === 0x20 || bytes[i] === 0x09)) i++
  return i < end && bytes[i] === 0x3a ? i + 1 : -1
}

/**
 * The body framing of the head in bytes[from, end) (`end`: the index of its CRLFCRLF): its Content-Length, NO_LENGTH
 * or UNFRAMED. Read from the bytes: the head is never made a string, nor matched with a regular expression (both were
 * most of the gate's own work, twice per request, issue 11). A field counts at the start of a line, its name in any
 * case followed by `[ \t]*:`; a Content-Length value is 1 to 15 decimal digits once trimmed of white space.
 */
export function framingAt(bytes: Uint8Array, from: number, end: number): number {
  let length = NO_LENGTH
  for (let at = from; at + 1 < end; at++) {
    if (bytes[at] !== 0x0d || bytes[at + 1] !== 0x0a) continue
    const name = at + 2
    const first = lower(bytes[name] ?? 0)
    if (first === 0x74 ? fieldValueAt(bytes, name, end, 'transfer-encoding') >= 0 : first === 0x75 && fieldValueAt(bytes, name, end, 'upgrade') >= 0) return UNFRAMED
    if (first !== 0x63) continue
    let value = fieldValueAt(bytes, name, end, 'content-length')
    if (value < 0) continue
    let valueEnd = value
    while (valueEnd < end && bytes[valueEnd] !== 0x0d) valueEnd++
    while (value < valueEnd && isTrimmed(bytes[value] as number)) value++
    while (valueEnd > value && isTrimmed(bytes[valueEnd - 1] as number)) valueEnd--
    if (length !== NO_LENGTH || valueEnd === value || valueEnd - value > 15) return UNFRAMED
    length = 0
    for (let i = value; i < valueEnd; i++) {
      const digit = (bytes[i] as number) - 0x30
      if (digit < 0 || digit > 9) return UNFRAMED
      length = length * 10 + digit
    }
    at = valueEnd - 1
  }
  return length
}

/** A request head starts `HEAD ` (its answer has no body). */
const isHeadRequest = (bytes: Uint8Array, at: number): boolean =>
  bytes[at] === 0x48 && bytes[at + 1] === 0x45 && bytes[at + 2] === 0x41 && bytes[at + 3] === 0x44 && bytes[at + 4] === 0x20

/**
 * Joins `client` and `up` (uWS's side of the connection) through the gate, starting with `first`: the bytes the front
 * read before it chose to pass the connection (a whole first head, and whatever followed it). Returns what takes the
 * bytes uWS sends, chunk by chunk: the caller reads `up` (front.ts reads it into one buffer with `onread`, no 'data'
 * events) and hands each chunk over, which the gate may keep.
 */
export function gateConnection(client: Socket, up: Socket, first: Buffer, headMaxBytes: number, refuseHead: () => Buffer): (chunk: Buffer) => void {
  let open = true
  /** Client bytes not yet forwarded: the start of the next request, or requests pipelined behind the pending one. */
  let held = first
  /** Body bytes of the forwarded request still to forward (they go as they come, never held). */
  let requestBodyLeft = 0
  /** The forwarded request whose answer is not complete: 'HEAD' (its answer has no body) or 'other'. */
  let pending: 'HEAD' | 'other' | undefined
  let answerHead: Buffer | undefined
  let answerBodyLeft = 0
  let clientEnded = false

  const toUpstream = (bytes: Buffer): void => {
    if (bytes.length > 0 && !up.write(bytes)) client.pause()
  }
  /** A request head longer than uWS takes (front.ts UPSTREAM_HEAD_MAX_BYTES) is answered 431 here; the connection ends. */
  const refuse = (): void => {
    open = false
    held = Buffer.alloc(0)
    client.end(refuseHead())
    up.end()
  }
  const letGo = (): void => {
    open = false
    const rest = held
    held = Buffer.alloc(0)
    toUpstream(rest)
    if (clientEnded) up.end()
  }

  /** Forwards what may go now: the body of the forwarded request, then the next request when nothing is pending. */
  const pump = (): void => {
    while (open && held.length > 0) {
      if (requestBodyLeft > 0) {
        const n = Math.min(requestBodyLeft, held.length)
        toUpstream(held.subarray(0, n))
        held = held.subarray(n)
        requestBodyLeft -= n
        continue
      }
      if (pending !== undefined) break
      // RFC 9112 section 2.2: empty lines before a request line are ignored (an old client may send one after a POST
      // body). uWS answers nothing to a request after one and holds the connection until its idle timeout: they are
      // dropped here, never forwarded (an outsider's finding, test/http/outsider17-framing.test.ts).
      let start = 0
      while (held[start] === 0x0d && held[start + 1] === 0x0a) start += 2
      if (start > 0) held = held.subarray(start)
      const end = held.indexOf(CRLF2)
      const headLength = end + 4
      if (end < 0 ? held.length > headMaxBytes : headLength > headMaxBytes) {
        refuse()
        break
      }
      if (end < 0) break
      const framing = framingAt(held, 0, end)
      if (framing === UNFRAMED) { letGo(); return }
      pending = isHeadRequest(held, 0) ? 'HEAD' : 'other'
      // The head and the body bytes already here go in one write: a write to uWS's socket is a system call, and the
      // head and body of a small request arrive together (two writes were a third of the front's CPU, issue 11).
      const contentLength = framing === NO_LENGTH ? 0 : framing
      const forwarded = headLength + Math.min(contentLength, held.length - headLength)
      toUpstream(forwarded === held.length ? held : held.subarray(0, forwarded))
      requestBodyLeft = contentLength - (forwarded - headLength)
      held = forwarded === held.length ? EMPTY : held.subarray(forwarded)
    }
    if (!open) return
    if (held.length === 0 && clientEnded && requestBodyLeft === 0) up.end()
    if (held.length > HELD_LIMIT_BYTES) client.pause()
    else if (!up.writableNeedDrain) client.resume()
  }

  /** Reads the answer's framing as its bytes pass to the client; a finished answer lets the next request go. */
  const follow = (chunk: Buffer): void => {
    let at = 0
    while (open && at < chunk.length) {
      if (answerBodyLeft > 0) {
        const n = Math.min(answerBodyLeft, chunk.length - at)
        answerBodyLeft -= n
        at += n
        if (answerBodyLeft === 0) finished()
        continue
      }
      const head = answerHead === undefined ? (at === 0 ? chunk : chunk.subarray(at)) : Buffer.concat([answerHead, chunk.subarray(at)])
      const end = head.indexOf(CRLF2)
      if (end < 0) {
        answerHead = head
        if (head.length > ANSWER_HEAD_LIMIT_BYTES) letGo()
        return
      }
      at = chunk.length - (head.length - end - 4)
      answerHead = undefined
      const status = Number(head.toString('latin1', 9, Math.min(12, end)))
      if (status === 101) { letGo(); return }
      if (status >= 100 && status < 200) continue
      const framing = framingAt(head, 0, end)
      if (pending === 'HEAD' || status === 204 || status === 304) answerBodyLeft = 0
      else if (framing < 0) { letGo(); return }
      else answerBodyLeft = framing
      if (answerBodyLeft === 0) finished()
    }
  }
  const finished = (): void => {
    pending = undefined
    pump()
  }

  client.on('data', (chunk: Buffer) => {
    if (!open) { toUpstream(chunk); return }
    held = held.length === 0 ? chunk : Buffer.concat([held, chunk])
    pump()
  })
  // The client's FIN goes on once everything before it has: uWS then aborts a request still pending, as it does when
  // it owns the socket.
  client.on('end', () => {
    clientEnded = true
    if (!open || (held.length === 0 && requestBodyLeft === 0)) up.end()
  })
  up.on('drain', () => { if (!open || held.length <= HELD_LIMIT_BYTES) client.resume() })
  client.on('drain', () => up.resume())
  up.on('end', () => client.end())
  pump()
  return (chunk: Buffer): void => {
    if (!client.write(chunk)) up.pause()
    if (open) follow(chunk)
  }
}
