// The front hands connections to uWS on a Unix socket in a temporary directory, and a Unix socket's path holds at most
// 107 bytes: under a TMPDIR too deep for that (a deep CI workspace) the service must still start and answer.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t from 'tap'
import { startFront, UNIX_SOCKET_PATH_MAX_BYTES } from '../../src/http/front.ts'
import { silentLogger } from '../../src/http/log.ts'
import { startServer } from '../../src/http/server.ts'
import { testRoutes } from './fixtures/routes.ts'

const outer = mkdtempSync(join(tmpdir(), 'deep-tmpdir-'))
const deep = join(outer, 'd'.repeat(UNIX_SOCKET_PATH_MAX_BYTES))
mkdirSync(deep)
const saved = process.env.TMPDIR
process.env.TMPDIR = deep
t.teardown(() => {
  if (saved === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = saved
  rmSync(outer, { recursive: true, force: true })
})

t.test('under a TMPDIR too deep for a socket path the uWS server starts and answers', async (t) => {
  const server = await startServer({ transport: 'uws', routes: testRoutes, port: 0, rateLimit: false, log: silentLogger })
  t.teardown(() => server.close(500))
  const res = await fetch(`${server.url}/items/abc`)
  t.equal(res.status, 200)
  t.same(await res.json(), { itemId: 'abc', verbose: false })
})

t.test("the front's socket path fits the limit and its directory is removed on close", async (t) => {
  const front = await startFront({ host: '127.0.0.1', port: 0, log: silentLogger })
  t.ok(Buffer.byteLength(front.upstreamPath) <= UNIX_SOCKET_PATH_MAX_BYTES, front.upstreamPath)
  front.close()
  t.notOk(existsSync(dirname(front.upstreamPath)), 'its directory is gone')
})
