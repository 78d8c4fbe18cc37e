// How the node:net front reads a passed connection (issue 11): a ping-pong of 1,000-byte messages over a socket, in
// one thread, one side reading either with Node's default reads ('data' events, a 64 KiB buffer allocated per read) or
// into the thread's one shared buffer with a copy the size of the chunk (src/http/front.ts). Two pairs: over a Unix
// socket, the side that connects reading with `onread` (uWS's side of a passed connection); over loopback TCP, the
// side net.Server accepts reading through readAcceptedIntoBuffer (the client's side). Prints the median CPU per
// message (both sides of the ping-pong) of 16 rounds of each way, alternated.
//   node --import tsx bench/front-read.ts
import { createServer, connect, type Server, type Socket } from 'node:net'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { readAcceptedIntoBuffer } from '../src/http/front.ts'

const msg = Buffer.alloc(1000, 0x61)
let onChunk: (c: Buffer) => void = () => {}
const listen = (server: Server, at: string | number) => new Promise<void>((r) => (typeof at === 'string' ? server.listen(at, r) : server.listen(at, '127.0.0.1', r)))
const round = (sock: Socket, count: number) => new Promise<number>((resolve) => {
  let left = count
  const t0 = process.cpuUsage()
  onChunk = (c) => { if (c.length !== 1000) throw new Error('split'); if (--left === 0) { const d = process.cpuUsage(t0); resolve((d.user + d.system) / count) } else sock.write('x') }
  sock.write('x')
})
const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1] as number
const compare = async (label: string, ways: Record<string, Socket>) => {
  await new Promise((r) => setTimeout(r, 200))
  const res: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((way) => [way, []]))
  for (let i = 0; i < 16; i++) for (const [way, sock] of Object.entries(ways)) res[way]!.push(await round(sock, 10000))
  console.log(`${label}: ${Object.keys(ways).map((way) => `${way} ${med(res[way]!).toFixed(2)}`).join(', ')} us/msg (both sides of the ping-pong in this thread)`)
}

// uWS's side: the front connects, the peer echoes.
const path = join(mkdtempSync(join(tmpdir(), 'rp-')), 's.sock')
const echo = createServer((s) => { s.setNoDelay(true); s.on('data', () => { s.write(msg) }) })
await listen(echo, path)
const shared = Buffer.allocUnsafe(64 * 1024)
const plain = connect({ path })
plain.on('data', (c: Buffer) => onChunk(c))
const fast = connect({ path, onread: { buffer: shared, callback: (n) => { const c = Buffer.allocUnsafe(n); shared.copy(c, 0, 0, n); onChunk(c); return true } } })
await compare('connected (Unix socket)', { plain, onread: fast })

// The client's side: the front accepts, the peer sends; the accepted socket answers what it reads.
const accepted: Record<string, Server> = {
  plain: createServer({ noDelay: true }, (s) => { s.on('data', (c: Buffer) => onChunk(c)) }),
  buffer: createServer({ noDelay: true }, (s) => { if (!readAcceptedIntoBuffer(s, (c) => onChunk(c))) throw new Error('no user buffer') }),
}
const peers: Record<string, Socket> = {}
for (const [way, server] of Object.entries(accepted)) {
  await listen(server, 0)
  const address = server.address()
  const peer = connect({ port: typeof address === 'object' && address !== null ? address.port : 0, host: '127.0.0.1', noDelay: true })
  // The peer echoes each 'x' with a message: the accepted side's read is the one measured.
  const sock = await new Promise<Socket>((r) => server.once('connection', r))
  peer.on('data', () => { peer.write(msg) })
  peers[way] = { write: () => sock.write('x') } as unknown as Socket
}
await compare('accepted (TCP)', peers)
process.exit(0)
