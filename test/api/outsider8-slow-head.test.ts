// A stranger's slow heads must not hold the front's connections: the node:net front closed a connection that had not
// sent a whole head after 10 s of silence, but every byte started the 10 s again, so a head sent a byte every few
// seconds held its connection for as long as the stranger liked (a 16 KiB head at a byte every 9 s: 41 hours). Each
// such connection is a file descriptor of the service's process: measured with the process limited to 400, 347 of
// them (a byte each every 5 s) left every honest GET /health unanswered for as long as they trickled. The head now has
// a deadline from the connection's start. Fails on c2ad961: the trickling connection is still open after 30 s.
import { connect } from 'node:net'
import t from 'tap'
import { startHarness } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())

/** Sends `head` a byte every `everyMs`; resolves with how many bytes went out before the service closed, or null. */
function trickle(port: number, head: string, everyMs: number, forMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let sent = 0
    let timer: NodeJS.Timeout | undefined
    const startedAt = Date.now()
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(sent)
    })
    const tick = (): void => {
      if (Date.now() - startedAt > forMs) {
        socket.removeAllListeners('close')
        socket.destroy()
        resolve(null)
        return
      }
      socket.write(head[sent % head.length] as string)
      sent += 1
      timer = setTimeout(tick, everyMs)
    }
    socket.once('connect', tick)
  })
}

t.test('a head trickled a byte every 2 s is cut at the head deadline, not kept open by each byte', async (t) => {
  const port = Number(new URL(h.url).port)
  // Never a whole head: no blank line ends it.
  const sent = await trickle(port, 'GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(1000), 2_000, 30_000)
  t.not(sent, null, `the service closed the connection while the head was still coming (after ${sent} bytes)`)
  const answer = await fetch(`${h.url}/health`)
  t.equal(answer.status, 200, 'others are served')
})
