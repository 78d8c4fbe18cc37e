// How the node:net front reads uWS's side of a passed connection (issue 11): a ping-pong of 1,000-byte messages over a
// Unix socket, in one thread, the reading side either Node's default reads ('data' events, a 64 KiB buffer allocated
// per read) or `onread` into one shared buffer and a copy the size of the chunk (src/http/front.ts). Prints the median
// CPU per message (both sides of the ping-pong) of 16 rounds of each, alternated.
//   node --import tsx bench/front-read.ts
import { createServer, connect, type Socket } from 'node:net'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
const path = join(mkdtempSync(join(tmpdir(), 'rp-')), 's.sock')
const msg = Buffer.alloc(1000, 0x61)
const peers: Socket[] = []
const server = createServer((s) => { s.setNoDelay(true); peers.push(s); s.on('data', () => { s.write(msg) }) })
await new Promise<void>((r) => server.listen(path, r))
const shared = Buffer.allocUnsafe(64 * 1024)
let onChunk: (c: Buffer) => void = () => {}
const plain = connect({ path })
plain.on('data', (c: Buffer) => onChunk(c))
const fast = connect({ path, onread: { buffer: shared, callback: (n) => { const c = Buffer.allocUnsafe(n); shared.copy(c, 0, 0, n); onChunk(c); return true } } })
await new Promise((r) => setTimeout(r, 200))
const round = (sock: Socket, count: number) => new Promise<number>((resolve) => {
  let left = count
  const t0 = process.cpuUsage()
  onChunk = (c) => { if (c.length !== 1000) throw new Error('split'); if (--left === 0) { const d = process.cpuUsage(t0); resolve((d.user + d.system) / count) } else sock.write('x') }
  sock.write('x')
})
const res = { plain: [] as number[], onread: [] as number[] }
for (let i = 0; i < 16; i++) {
  res.plain.push(await round(plain, 10000))
  res.onread.push(await round(fast, 10000))
}
const med = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1] as number
console.log(`plain ${med(res.plain).toFixed(2)} us/msg, onread ${med(res.onread).toFixed(2)} us/msg (both sides of the ping-pong in this thread)`)
process.exit(0)
