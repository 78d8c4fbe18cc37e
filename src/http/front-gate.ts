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
/** Bytes of held-back requests the gate keeps before it stops reading the client (TCP pushes back on the client). */
const HELD_LIMIT_BYTES = 256 * 1024
/** An answer head not whole by this length is not framed by the gate (uWS's heads are far shorter). */
const ANSWER_HEAD_LIMIT_BYTES = 16 * 1024
const FRAMING_FIELDS = /\r\n(content-length|transfer-encoding|upgrade)[ \t]*:[ \t]*([^\r]*)/gi
const DECIMAL = /^[0-9]{1,15}$/

interface Framing {
  contentLength: number | undefined
  /** Two Content-Lengths, a Transfer-Encoding, an Upgrade, or a length that is not a decimal: the gate lets go. */
  unframed: boolean
}

/** The body framing a head declares (the head's text runs up to, not including, its CRLFCRLF). */
export function framingOf(head: string): Framing {
  let contentLength: number | undefined
  let unframed = false
  // exec on the one regular expression: matchAll copies it (and makes an iterator) on every head, twice per request.
  FRAMING_FIELDS.lastIndex = 0
  for (let match = FRAMING_FIELDS.exec(head); match !== null; match = FRAMING_FIELDS.exec(head)) {
    const name = match[1] as string
    if (name.length !== 14 || name.toLowerCase() !== 'content-length') { unframed = true; continue }
    const text = (match[2] as string).trim()
    if (contentLength !== undefined || !DECIMAL.test(text)) unframed = true
    else contentLength = Number(text)
  }
  return { contentLength, unframed }
}

/** The head at the start of `bytes` (after the empty lines a client may send first), or undefined until it is whole. */
function headAt(bytes: Buffer): { text: string; length: number } | undefined {
  const end = bytes.indexOf(CRLF2)
  return end < 0 ? undefined : { text: bytes.toString('latin1', 0, end), length: end + 4 }
}

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
  /** The method of the forwarded request whose answer is not complete (a HEAD answer has no body). */
  let pending: string | undefined
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
      let start = 0
      while (held[start] === 0x0d && held[start + 1] === 0x0a) start += 2
      const head = headAt(start === 0 ? held : held.subarray(start))
      if (head === undefined ? held.length - start > headMaxBytes : head.length > headMaxBytes) {
        refuse()
        break
      }
      if (head === undefined) break
      const framing = framingOf(head.text)
      if (framing.unframed) { letGo(); return }
      const method = head.text.slice(0, Math.max(0, head.text.indexOf(' ')))
      pending = method
      // The head and the body bytes already here go in one write: a write to uWS's socket is a system call, and the
      // head and body of a small request arrive together (two writes were a third of the front's CPU, issue 11).
      const contentLength = framing.contentLength ?? 0
      const forwarded = start + head.length + Math.min(contentLength, held.length - start - head.length)
      toUpstream(held.subarray(0, forwarded))
      requestBodyLeft = contentLength - (forwarded - start - head.length)
      held = held.subarray(forwarded)
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
      answerHead = answerHead === undefined ? chunk.subarray(at) : Buffer.concat([answerHead, chunk.subarray(at)])
      const head = headAt(answerHead)
      if (head === undefined) {
        if (answerHead.length > ANSWER_HEAD_LIMIT_BYTES) letGo()
        return
      }
      at = chunk.length - (answerHead.length - head.length)
      answerHead = undefined
      const status = Number(head.text.slice(9, 12))
      if (status === 101) { letGo(); return }
      if (status >= 100 && status < 200) continue
      const framing = framingOf(head.text)
      if (pending === 'HEAD' || status === 204 || status === 304) answerBodyLeft = 0
      else if (framing.unframed || framing.contentLength === undefined) { letGo(); return }
      else answerBodyLeft = framing.contentLength
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
