// A new agent developer followed only the published documents through a lender's whole life and found statements
// the service does not keep: the catalog's stream entry listed the close codes 4008 and 1001 but not 4001
// session_ended, with which the service closes a stream whose session ended (a revocation, or a sign-in beyond the
// wallet's session bound), and llms.txt never named it, so a client reading the documents alone took 4001 for an
// unknown error instead of signing in again. Each check holds a document to the service.
import t from 'tap'
import { STREAM_CLOSE } from '../../src/stream/messages.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startHarness } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('the catalog names every code a stream closes with, and llms.txt says what 4001 means', async (t) => {
  const { closeCodes } = (await anyone.get('/.well-known/service.json')).body.stream
  for (const close of Object.values(STREAM_CLOSE)) t.equal(closeCodes[String(close.code)], close.name, `closeCodes names ${close.code} ${close.name}`)
  const llms: string = (await anyone.get('/llms.txt')).body
  t.match(llms, /4001 "session_ended: \.\.\."[^\n]*\n?[^\n]*sign in again/, 'llms.txt: a 4001 close means sign in again')
  const events = (await anyone.get('/openapi.json')).body.paths['/events'].get.description as string
  t.match(events, /Close code 4001/, 'the OpenAPI description of /events names 4001')
})
