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
// than uWS takes whole (front.ts UPSTREAM_HEAD_MAX_BYTES) is answered 431 by the gate, one with a method uWS does not
// know 501, and one uWS would answer nothing to (a control byte, a byte past 0x7f, a bare CR or LF, a field line that is
// not `name:value`: framingAt; a request line that is not `METHOD /path HTTP/1.1`, no Host or two: requestLineFault)
// 400; each ends the connection. A CONNECT is the connection's last request: uWS answers it and closes (lastRequest).
import type { Socket } from 'node:net'

const CRLF2 = Buffer.from('\r\n\r\n')
const EMPTY = Buffer.alloc(0)
/** Bytes of held-back requests the gate keeps before it stops reading the client (TCP pushes back on the client). */
const HELD_LIMIT_BYTES = 256 * 1024
/** An answer head not whole by this length is not framed by the gate (uWS's heads are far shorter). */
const ANSWER_HEAD_LIMIT_BYTES = 16 * 1024
/** framingAt: the head declares no body length (and nothing that stops the gate). */
export const NO_LENGTH = -1
/** framingAt: two Content-Lengths, a Transfer-Encoding or an Upgrade: the gate lets go. */
export const UNFRAMED = -2

/** framingAt: a head that breaks a rule the front enforces (each answered 400 `bad_request_head`, front.ts says which). */
/** A control byte (NUL, VT, DEL, ...) in the request line or a field value. */
export const FAULT_CONTROL = -3
/** A byte 0x80 or above in the request line or a field value but a Cookie's (obs-text: no field this service reads carries one). */
export const FAULT_OBS_TEXT = -4
/** A CR not followed by LF, or an LF not after a CR (a bare-LF line ending). */
export const FAULT_LINE_END = -5
/** A field line that is not `name:value`: no colon, white space before it, a name byte other than a letter, digit or `-`, an obs-fold. */
export const FAULT_FIELD_LINE = -6
/** gateConnection's refusals besides those: a method uWS does not know (501), a head longer than uWS takes (431). */
export const FAULT_METHOD = -7
export const FAULT_TOO_LARGE = -8
/**
 * gateConnection's refusals of a later head by the first head's rules (front.ts decideFirstRequest, answered 400 the
 * same way): a request line that is not `METHOD /path HTTP/1.1`, no Host field, more than one.
 */
export const FAULT_REQUEST_LINE = -9
export const FAULT_NO_HOST = -10
export const FAULT_HOSTS = -11
/**
 * A Content-Length value that is not a decimal number (a sign, a list, empty; 400 `bad_request_head`), or one of 10
 * digits or more (413 `payload_too_large`): uWS closes the connection on either with nothing written (outsider18).
 */
export const FAULT_CONTENT_LENGTH = -12
export const FAULT_BODY_TOO_LARGE = -13

/** The byte at `at` as a lower-case ASCII letter when it is an upper-case one. */
const lower = (byte: number): number => (byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte)
/** A head's bytes by class: 0 printable ASCII, space or tab; 1 CR; 2 another control byte (LF, NUL, VT, DEL); 3 0x80 and above. */
const BYTE_CLASS = new Uint8Array(256).map((_, b) => (b >= 0x80 ? 3 : b === 0x0d ? 1 : (b >= 0x20 && b < 0x7f) || b === 0x09 ? 0 : 2))
/**
 * 1 for the bytes of a field name uWS reads: letters, digits and `-`. RFC 9110 section 5.6.2 allows every tchar
 * (`!#$%&'*+.^_`|~` too), but the pinned build answers nothing to a head with any of those in a name and holds the
 * connection until its idle timeout (an outsider's finding, test/http/outsider18-heads.test.ts).
 */
const TOKEN = new Uint8Array(256).map((_, b) => (/[0-9A-Za-z-]/.test(String.fromCharCode(b)) ? 1 : 0))
/** Host fields in the head framingAt read last (requestLineFault reads it; a module variable: no object per call). */
let hostFields = 0

/** The field name in bytes[at, nameEnd) is `name` (lower case), in any case. */
function isName(bytes: Uint8Array, at: number, nameEnd: number, name: string): boolean {
  if (nameEnd - at !== name.length) return false
  for (let i = 0; i < name.length; i++) if (lower(bytes[at + i] as number) !== name.charCodeAt(i)) return false
  return true
}

/**
 * The length a Content-Length value in bytes[value, valueEnd) declares (1 to 9 decimal digits, trimmed of SP and HTAB),
 * FAULT_CONTENT_LENGTH (not a decimal number) or FAULT_BODY_TOO_LARGE (10 digits or more).
 */
function contentLengthOf(bytes: Uint8Array, value: number, valueEnd: number): number {
  while (value < valueEnd && (bytes[value] === 0x20 || bytes[value] === 0x09)) value++
  while (valueEnd > value && (bytes[valueEnd - 1] === 0x20 || bytes[valueEnd - 1] === 0x09)) valueEnd--
  if (valueEnd === value) return FAULT_CONTENT_LENGTH
  let length = 0
  for (let i = value; i < valueEnd; i++) {
    const digit = (bytes[i] as number) - 0x30
    if (digit < 0 || digit > 9) return FAULT_CONTENT_LENGTH
    length = length * 10 + digit
  }
  return valueEnd - value > 9 ? FAULT_BODY_TOO_LARGE : length
}

/**
 * The body framing of the head in bytes[from, end) (`end`: the index of its CRLFCRLF): its Content-Length, NO_LENGTH,
 * UNFRAMED, or the FAULT_ the head breaks. Read from the bytes in one walk: the head is never made a string, nor matched
 * with a regular expression (both were most of the gate's own work, twice per request, issue 11). Every line ends in
 * CRLF; the first line (request or status line) and every field value but a Cookie's (which no route reads, and which
 * may carry another application's UTF-8 for the same host) hold printable ASCII, space and tab only; every
 * later line is `name:value`, the name letters, digits and `-` (uWS answers nothing to a head that breaks these, and
 * drops bytes past 0x7f at the end of a value: outsider17, outsider18). A Content-Length value is 1 to 9 decimal digits
 * once trimmed (uWS closes on another: FAULT_CONTENT_LENGTH, FAULT_BODY_TOO_LARGE); two of them, a Transfer-Encoding
 * or an Upgrade make it UNFRAMED.
 */
export function framingAt(bytes: Uint8Array, from: number, end: number): number {
  let length = NO_LENGTH
  let unframed = false
  /** The first Content-Length fault, answered once every line is known to be well formed (their faults come first). */
  let lengthFault = 0
  let at = from
  hostFields = 0
  for (let line = 0; ; line++) {
    let i = at
    let name = -1
    /** A Cookie's value may hold bytes past 0x7f (a browser sends another application's UTF-8 cookies for the host). */
    let obsText = false
    if (line > 0) {
      while (i < end && TOKEN[bytes[i] as number] === 1) i++
      if (i === at || i === end || bytes[i] !== 0x3a) return FAULT_FIELD_LINE
      const first = lower(bytes[at] as number)
      if (first === 0x74 ? isName(bytes, at, i, 'transfer-encoding') : first === 0x75 && isName(bytes, at, i, 'upgrade')) unframed = true
      else if (first === 0x63 && isName(bytes, at, i, 'content-length')) name = i + 1
      else if (first === 0x68 && isName(bytes, at, i, 'host')) hostFields++
      else if (first === 0x63 && isName(bytes, at, i, 'cookie')) obsText = true
      i++
    }
    if (obsText) while (i < end && (BYTE_CLASS[bytes[i] as number] as number) % 3 === 0) i++
    else while (i < end && BYTE_CLASS[bytes[i] as number] === 0) i++
    if (name >= 0) {
      const declared = contentLengthOf(bytes, name, i)
      if (declared < 0) lengthFault ||= declared
      else if (length !== NO_LENGTH) unframed = true
      else length = declared
    }
    if (i >= end) return lengthFault !== 0 ? lengthFault : unframed ? UNFRAMED : length
    const byte = bytes[i] as number
    if (byte !== 0x0d || bytes[i + 1] !== 0x0a) return byte === 0x0d || byte === 0x0a ? FAULT_LINE_END : byte >= 0x80 ? FAULT_OBS_TEXT : FAULT_CONTROL
    at = i + 2
  }
}

/** The methods the pinned uWS build knows, upper case: it closes a connection, with nothing written, on any other. */
export const KNOWN_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'CONNECT', 'TRACE'] as const
const METHOD_BYTES = KNOWN_METHODS.map((method) => Buffer.from(`${method} `, 'latin1'))
/** knownMethodAt's answers for the methods the gate treats apart (HEAD: no answer body; CONNECT: the last request). */
const HEAD = KNOWN_METHODS.indexOf('HEAD')
const CONNECT = KNOWN_METHODS.indexOf('CONNECT')

/** The index in KNOWN_METHODS of the method (and a space) the request line at `at` starts with, or -1. */
export function knownMethodAt(bytes: Uint8Array, at: number): number {
  for (let m = 0; m < METHOD_BYTES.length; m++) {
    const method = METHOD_BYTES[m] as Buffer
    let k = 0
    while (k < method.length && bytes[at + k] === method[k]) k++
    if (k === method.length) return m
  }
  return -1
}

const REQUEST_LINE_END = Buffer.from(' HTTP/1.1\r\n', 'latin1')

/**
 * The request head in bytes[0, end), which framingAt just read without a fault and whose method is known: 0, or the
 * FAULT_ of a request line that is not `METHOD /path HTTP/1.1` (one space each side of a target that starts with `/`;
 * uWS answers nothing to `*`, an absolute URL, an authority, a tab or space in the target, another version) or of a
 * Host field missing or repeated (uWS answers nothing without one). The first head of a connection is judged by
 * front.ts decideFirstRequest, which also takes HTTP/1.0.
 */
export function requestLineFault(bytes: Uint8Array, end: number): number {
  let i = bytes.indexOf(0x20) + 1
  if (bytes[i] !== 0x2f) return FAULT_REQUEST_LINE
  // framingAt let only printable ASCII, space and tab through: the target ends at the first space, tab or CR.
  while (i < end && (bytes[i] as number) > 0x20) i++
  for (let k = 0; k < REQUEST_LINE_END.length; k++) if (bytes[i + k] !== REQUEST_LINE_END[k]) return FAULT_REQUEST_LINE
  return hostFields === 1 ? 0 : hostFields === 0 ? FAULT_NO_HOST : FAULT_HOSTS
}

/** `connection: close`, a field line: what the front adds to a request uWS is to close after, and to its answer. */
const CONNECTION_CLOSE = Buffer.from('connection: close\r\n')

/** `bytes` with CONNECTION_CLOSE after the line that starts at `at`; undefined when that line does not end in them. */
function closeAfterLine(bytes: Buffer, at: number): Buffer | undefined {
  const line = bytes.indexOf('\r\n', at)
  return line < 0 ? undefined : Buffer.concat([bytes.subarray(0, line + 2), CONNECTION_CLOSE, bytes.subarray(line + 2)])
}

/**
 * A chunk of what uWS sends, with CONNECTION_CLOSE after the status line of the final answer, past any 1xx answers
 * (uWS writes `100 Continue` itself to a request with `Expect: 100-continue`): undefined when that status line does
 * not start in `chunk` (whose bytes then go as they are; the caller tries the next).
 */
export function answerSaysClose(chunk: Buffer): Buffer | undefined {
  let at = 0
  while (chunk[at + 9] === 0x31) {
    const end = chunk.indexOf(CRLF2, at)
    if (end < 0) return undefined
    at = end + 4
  }
  return at < chunk.length ? closeAfterLine(chunk, at) : undefined
}

/** What gateConnection takes: each side's bytes as they are read (the gate may keep a chunk: never a reused buffer). */
export interface GatedConnection {
  /** A chunk the client sent. */
  readonly fromClient: (chunk: Buffer) => void
  /** A chunk uWS sent. */
  readonly fromUpstream: (chunk: Buffer) => void
}

/**
 * Joins `client` and `up` (uWS's side of the connection) through the gate, starting with `first`: the bytes the front
 * read before it chose to pass the connection (a whole first head, and whatever followed it). Returns what takes the
 * bytes each side sends, chunk by chunk: the caller reads both sockets (front.ts reads each into the thread's one
 * buffer, no 'data' events) and hands each chunk over, which the gate may keep.
 */
export function gateConnection(client: Socket, up: Socket, first: Buffer, headMaxBytes: number, refuseHead: (fault: number) => Buffer): GatedConnection {
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
  /** A CONNECT went (lastRequest): the gate has ended, and the client's bytes past its body are dropped. */
  let last = false
  /** ... and the answer's head is still to say `connection: close`. */
  let closeUnsaid = false

  const toUpstream = (bytes: Buffer): void => {
    if (bytes.length > 0 && !up.write(bytes)) client.pause()
  }
  /**
   * A request head uWS would not answer (longer than it takes, front.ts UPSTREAM_HEAD_MAX_BYTES; an unknown method; a
   * FAULT_ of framingAt) is answered here (refuseHead: 431, 501 or 400); the connection ends.
   */
  const refuse = (fault: number): void => {
    open = false
    held = Buffer.alloc(0)
    client.end(refuseHead(fault))
    up.end()
  }
  /**
   * A CONNECT with a path (the front answers one with an authority 400) is the connection's last request, as on
   * node:http: it goes to uWS with `connection: close` before its fields (uWS reads the first Connection field), so uWS
   * answers it by the route table (405, or 404 on a path without routes) and closes; before, uWS answered it like a GET
   * and kept the connection until its 10 s idle timeout. Its body (its Content-Length; all that follows when it has
   * none the gate frames) goes on, every byte after it is dropped (a client that opens a tunnel sends the tunnel's
   * bytes behind the head), and the answer says `connection: close`. The gate ends. A normal request pays one compare
   * for it: knownMethodAt, which every head already went through, now names the method, which also replaced the check
   * of the bytes `HEAD `.
   */
  const lastRequest = (framing: number, headLength: number): void => {
    open = false
    last = true
    closeUnsaid = true
    const head = held.subarray(0, headLength)
    const rest = held.subarray(headLength)
    held = EMPTY
    requestBodyLeft = framing === UNFRAMED ? Infinity : framing === NO_LENGTH ? 0 : framing
    // (The request line ends in CRLF: framingAt read it.)
    toUpstream(closeAfterLine(head, 0) ?? head)
    toUpstream(bodyPart(rest))
    if (clientEnded) up.end()
    else if (!up.writableNeedDrain) client.resume()
  }
  /** The part of `chunk` that is body of the last request (lastRequest), counted off requestBodyLeft. */
  const bodyPart = (chunk: Buffer): Buffer => {
    const part = chunk.length <= requestBodyLeft ? chunk : chunk.subarray(0, requestBodyLeft)
    requestBodyLeft -= part.length
    return part
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
        refuse(FAULT_TOO_LARGE)
        break
      }
      if (end < 0) break
      const framing = framingAt(held, 0, end)
      const method = knownMethodAt(held, 0)
      const fault = framing < UNFRAMED ? framing : method < 0 ? FAULT_METHOD : requestLineFault(held, end)
      if (fault !== 0) { refuse(fault); break }
      if (method === CONNECT) { lastRequest(framing, headLength); return }
      if (framing === UNFRAMED) { letGo(); return }
      pending = method === HEAD ? 'HEAD' : 'other'
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
      // (An answer head that breaks framingAt's rules, not one uWS writes, is not framed either.)
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
  const fromClient = (chunk: Buffer): void => {
    if (!open) { toUpstream(last ? bodyPart(chunk) : chunk); return }
    held = held.length === 0 ? chunk : Buffer.concat([held, chunk])
    pump()
  }
  const fromUpstream = (chunk: Buffer): void => {
    if (open) {
      if (!client.write(chunk)) up.pause()
      follow(chunk)
      return
    }
    // uWS closes after a `connection: close` request without saying so: the answer's head says it.
    if (closeUnsaid) {
      const saying = answerSaysClose(chunk)
      if (saying !== undefined) {
        closeUnsaid = false
        chunk = saying
      }
    }
    if (!client.write(chunk)) up.pause()
  }
  return { fromClient, fromUpstream }
}
