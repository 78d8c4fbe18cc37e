// An immutable route whose document may change a few times (the catalog and llms.txt once a network's
// reclaimDelaySeconds the start could not read is read: documentRevision in src/http/route.ts): built once per
// revision, not per request; a validator of the old document answered 200 with the new one and its new ETag, never a
// 304 that would keep a client on the old one; the new ETag answered 304.
import t from 'tap'
import Type from 'typebox'
import { defineRoute } from '../../src/http/route.ts'
import { startServer } from '../../src/http/server.ts'
import { testTransport } from './fixtures/routes.ts'

let revision = 0
let content = 'reclaimDelaySeconds: null'
let builds = 0
const route = defineRoute({
  method: 'get',
  path: '/doc.txt',
  operationId: 'doc',
  callers: 'any caller (a test route)',
  summary: 'An immutable document with a revision',
  auth: 'none',
  immutable: true,
  documentRevision: () => revision,
  responses: { 200: { description: 'Text', schema: Type.String(), contentType: 'text/plain; charset=utf-8' } },
  handler: () => {
    builds += 1
    return { status: 200, body: content }
  },
})

const server = await startServer({ transport: testTransport, routes: [route], port: 0, rateLimit: false, validateResponses: true, log: () => {} })
t.teardown(() => server.close(500))
const get = async (etag?: string) => {
  const answer = await fetch(`${server.url}/doc.txt`, { headers: { 'accept-encoding': 'identity', ...(etag === undefined ? {} : { 'if-none-match': etag }) } })
  return { status: answer.status, etag: answer.headers.get('etag') ?? '', body: await answer.text() }
}

t.test('a new revision: the document built again, the old ETag answered 200 with the new one', async (t) => {
  const first = await get()
  t.same([first.status, first.body], [200, 'reclaimDelaySeconds: null'])
  t.equal((await get(first.etag)).status, 304, 'its own ETag: 304')
  t.equal(builds, 1, 'built once for the revision, whatever the requests')

  content = 'reclaimDelaySeconds: 864000'
  t.equal((await get(first.etag)).status, 304, 'the content changed without a revision: still the document built (immutable)')
  revision += 1
  const second = await get(first.etag)
  t.same([second.status, second.body], [200, 'reclaimDelaySeconds: 864000'], 'the old ETag: 200 with the new document')
  t.not(second.etag, first.etag, 'a new ETag')
  t.equal((await get(second.etag)).status, 304, 'the new ETag: 304')
  t.equal(builds, 2, 'built once more')

  revision += 1
  t.equal((await get(second.etag)).status, 304, 'a revision with the same content: the same ETag, 304')
  t.equal(builds, 3)
})
