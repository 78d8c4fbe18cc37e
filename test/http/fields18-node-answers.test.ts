// node:http (HTTP_TRANSPORT=node) and the answers it owes (outsider18): a request node cannot parse, pipelined behind
// a good one, is answered 400 only after the good one's answer (its clientError handler ended the socket at once, so
// the first answer was lost); CONNECT, which node hands to a `connect` listener (none: closed with nothing written),
// is answered as behind uWS's front: a path by the route table (405 when the path has routes, 404 when none), an
// authority 400 malformed_request; the connection closes after it.
import t from 'tap'
import { startServer } from '../../src/http/server.ts'
import { answersTo } from './fixtures/raw.ts'
import { testRoutes } from './fixtures/routes.ts'

// uWS with its front is the reference: both run.
const servers = await Promise.all((['node', 'uws'] as const).map(async (transport) => ({ transport, server: await startServer({ transport, routes: testRoutes, port: 0, rateLimit: false, log: () => {} }) })))
t.teardown(() => Promise.all(servers.map(({ server }) => server.close(500))))
for (const { transport, server } of servers) {
  t.test(`${transport}: a bad request pipelined behind a good one: the good one is answered first`, async (t) => {
    const { answers, closed } = await answersTo(server.port, ['GET /items/first HTTP/1.1\r\nHost: x\r\n\r\nGET /a b HTTP/1.1\r\nHost: x\r\n\r\n'], 2, true)
    t.same(answers.map((a) => a.status), [200, 400], 'the answer, then the refusal')
    t.equal(JSON.parse(answers[1]?.body ?? '{}').code, 'malformed_request')
    t.ok(closed, 'then the connection closes')
  })

  t.test(`${transport}: CONNECT is answered, not dropped`, async (t) => {
    const connect = async (target: string) => {
      const { answers, closed } = await answersTo(server.port, [`CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`], 1, true)
      t.ok(closed, `${target}: the connection closes`)
      return answers.map((a) => [a.status, JSON.parse(a.body).code, a.headers.connection])
    }
    // The answer says the connection closes, on both (behind the front, uWS is sent the CONNECT with `connection: close`
    // and closes at once: before, it kept the connection until its 10 s idle timeout, test/http/front-upstream-close).
    t.same(await connect('/items/first'), [[405, 'method_not_allowed', 'close']], 'a path with routes: 405')
    t.same(await connect('/nowhere'), [[404, 'not_found', 'close']], 'a path without: 404')
    t.same(await connect('x:443'), [[400, 'malformed_request', 'close']], 'an authority: 400')
  })
}
