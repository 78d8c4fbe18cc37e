// An outsider against the live inspector where it is off (README "Live inspector": "INSPECTOR=off (or "inspector":
// false) turns it off anywhere, and the routes are then not mounted at all (404, absent from the OpenAPI document
// and the catalog)", the production setting, since it lists every actor's transitions to anyone and its ids are
// guessable). Nothing tested it off: each of its routes, its 5 MB script and its WebSocket feed answer 404, and no
// discovery document names them. What a probe costs a stranger: one unauthenticated GET.
import t from 'tap'
import WebSocket from 'ws'
import { startHarness, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { inspector: false } })
})
t.teardown(() => h?.stop())

t.test('with the inspector off, its routes are not there', async (t) => {
  for (const path of ['/inspect', '/inspect/counts', '/inspect/transitions', '/inspect/actors/lse_1', '/inspect/actors/job_1', '/inspect/mermaid.js']) {
    const reply = await fetch(h.url + path)
    t.equal(reply.status, 404, `GET ${path} is 404`)
    t.equal(((await reply.json()) as { code: string }).code, 'not_found', `${path}: no such route`)
  }
  const upgrade = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}/inspect/live`)
    ws.on('upgrade', () => {
      ws.close(1000)
      resolve(101)
    })
    ws.on('unexpected-response', (req, res) => {
      req.destroy()
      resolve(res.statusCode ?? 0)
    })
    ws.on('error', reject)
  })
  t.equal(upgrade, 404, 'the live feed does not upgrade')

  const openapi = (await (await fetch(`${h.url}/openapi.json`)).json()) as { paths: Record<string, unknown> }
  t.same(Object.keys(openapi.paths).filter((path) => path.startsWith('/inspect')), [], 'the OpenAPI document has no inspector path')
  const catalog = await (await fetch(`${h.url}/.well-known/service.json`)).text()
  t.notMatch(catalog, '/inspect', 'the catalog names no inspector route')
  const llms = await (await fetch(`${h.url}/llms.txt`)).text()
  t.notMatch(llms, '/inspect', 'llms.txt names no inspector route')
})
