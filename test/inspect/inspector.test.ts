// The live inspector against a running devnet service: its JSON routes (counts, feed, lookup with history, nothing
// beyond the public reads), and the page in headless Chromium (Debian's package, driven by playwright-core, kept off
// the network): counts move after a credit request and a match, the new lease is looked up with its history, and a
// screenshot is saved. Then a restart: the lease's history comes back from the store.
import { mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { chromium, type Browser } from 'playwright-core'
import WebSocket from 'ws'
import { socketTempDir } from '../../src/http/front.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

const CHROMIUM = '/usr/bin/chromium'
// The test's artifacts: TEST_ARTIFACTS_DIR when CI names one, else beside tap's own output (.tap/, ignored by git).
const ARTIFACTS = process.env['TEST_ARTIFACTS_DIR'] ?? fileURLToPath(new URL('../../.tap/artifacts/', import.meta.url))
/** The page's document, for the functions that run in the browser (this project type-checks without the DOM library). */
declare const document: {
  querySelector(selector: string): { textContent: string | null } | null
  getElementById(id: string): { textContent: string | null } | null
  body: { dataset: Record<string, string | undefined> }
}
const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
]
// Chromium listens on $TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket and aborts when that path is too long for
// a Unix socket (a TMPDIR deeper than 62 bytes): it gets a TMPDIR where the path fits.
const CHROMIUM_ENV = { ...process.env, TMPDIR: socketTempDir(Buffer.byteLength('/org.chromium.Chromium.XXXXXX/SingletonSocket')) }

let h: Harness
let browser: Browser | undefined
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await browser?.close()
  await h.stop()
})

async function get(path: string): Promise<{ status: number; body: any }> {
  const answer = await fetch(`${h.url}${path}`)
  return { status: answer.status, body: await answer.json() }
}

t.test('the page shows live counts that move with a credit request and a match, and looks up the new lease', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(5000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_inspect_1', receivableAtomic: usdc(2000) })

  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, env: CHROMIUM_ENV })
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } })
  const origin = new URL(h.url).origin
  const elsewhere: string[] = []
  let polls = 0
  page.on('request', (request) => {
    if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) elsewhere.push(request.url())
    if (request.url().includes('/inspect/counts')) polls++
  })
  const count = (kind: string, state: string) => page.textContent(`[data-count="${kind}.${state}"]`)
  const countIs = (kind: string, state: string, n: number) =>
    page.waitForFunction(([selector, want]) => document.querySelector(selector as string)?.textContent === want, [`[data-count="${kind}.${state}"]`, String(n)], { timeout: 15_000 })

  await page.goto(`${h.url}/inspect`)
  await page.waitForFunction(() => document.body.dataset['feed'] === 'live', undefined, { timeout: 15_000 })
  t.pass('the page follows the live feed (GET /inspect/live)')
  polls = 0
  await countIs('job', 'funded', 1)
  t.equal(await count('offer', 'offered'), '0', 'no offer yet')
  t.equal(await count('lease', 'leased'), '0', 'no lease yet')

  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_inspect_1', usdc(1000), usdc(100)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  await countIs('offer', 'offered', 1)
  t.pass('the credit request shows as one offer waiting for a lender')

  const match = await borrowerClient.post('/credit/match', { offerId })
  const leaseId = match.body.lease.leaseId as string
  await countIs('lease', 'leased', 1)
  await countIs('offer', 'leased', 1)
  t.equal(await count('offer', 'offered'), '0', 'the matched offer left offered')
  await page.waitForFunction((id) => document.getElementById('feed')?.textContent?.includes(`offer ${id}: offered -> leased  LEASE`), offerId, { timeout: 15_000 })
  t.pass('the feed shows the offer\'s LEASE')
  t.equal(polls, 0, 'every change above came over the live feed: the page did not poll while it was open')

  await page.fill('#actor-id', leaseId)
  await page.click('#lookup button')
  await page.waitForSelector(`[data-lookup="${leaseId}"]`, { timeout: 15_000 })
  t.equal(await page.getAttribute(`[data-lookup="${leaseId}"]`, 'data-state'), 'leased')
  const history = await page.$$eval('#history tr', (rows) => rows.slice(1).map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent)))
  t.same(history.map((row) => row.slice(1)), [['(new)', 'leased', 'created']], 'the lease\'s history: created leased')

  t.ok(await page.$('#diagram-lease svg'), 'the lease machine is drawn')
  t.ok(await page.$('#system-map svg'), 'the system map is drawn')
  t.match(await page.textContent('#diagram-offer svg') ?? '', /leased \(1\)/, 'the offer diagram labels its state with the live count')
  mkdirSync(ARTIFACTS, { recursive: true })
  const screenshot = join(ARTIFACTS, 'inspector.png')
  await page.screenshot({ path: screenshot, fullPage: true })
  t.ok(statSync(screenshot).size > 0, `screenshot saved: ${screenshot}`)
  t.same(elsewhere, [], 'the page loaded nothing from anywhere but the service')
  t.ok(lender.registration.sessionKey.privateKey)
})

t.test('the live feed: a snapshot, then updates as commits become durable; bounded watchers', async (t) => {
  const info = await get('/inspect/live')
  t.equal(info.status, 200, 'a plain GET says how to connect')
  t.equal(info.body.url, `${h.url.replace(/^http/, 'ws')}/inspect/live`)
  const messages: any[] = []
  const socket = new WebSocket(info.body.url)
  socket.on('message', (data) => messages.push(JSON.parse(String(data))))
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
  const next = async (predicate: (m: any) => boolean) => {
    for (let waited = 0; waited < 15_000; waited += 20) {
      const found = messages.find(predicate)
      if (found !== undefined) return found
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error('no such message within 15 s')
  }
  const snapshot = await next((m) => m.type === 'snapshot')
  t.same(snapshot.machines, (await get('/inspect/counts')).body.machines, 'the snapshot holds the counts GET /inspect/counts answers')

  await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(5000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_inspect_3', receivableAtomic: usdc(2000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_inspect_3', usdc(300), usdc(100)))
  const offerId = decision.body.offer.offerId as string
  const update = await next((m) => m.type === 'update' && m.transitions.some((e: any) => e.id === offerId && e.event === 'created'))
  t.match(update.transitions.find((e: any) => e.id === offerId), { kind: 'offer', from: null, to: 'offered', at: String }, 'the new offer arrives with its transition')
  t.ok(update.machines.offer.offered >= 1, 'and the counts after it')
  t.ok(messages.every((m, i) => i === 0 || m.type === 'update'), 'one snapshot, then updates only')

  // Bounded: the most watchers allowed are open, the next one is refused with a problem. Each from an address of its
  // own (127.0.0.0/8 is all loopback): one address holds at most watchersPerClientMax (test/inspect/live-bounds.test.ts).
  const limit = info.body.watchersMax as number
  const open = (await get('/inspect/live')).body.watchers as number
  t.ok(open >= 1, `the feeds open now are counted (${open}: this one, and the page's if its browser has not closed it yet)`)
  const more = Array.from({ length: limit - open }, (_, i) => new WebSocket(info.body.url, { localAddress: `127.0.1.${i + 1}` }))
  t.teardown(() => { for (const ws of more) ws.terminate() })
  await Promise.all(more.map((ws) => new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })))
  // From a client that holds one already: a full feed gives a newcomer the place of the largest holder's oldest feed
  // only when that holder has at least two more (test/inspect/live-bounds), which no client here has, whether or not
  // the page's own feed has closed yet.
  const refused = new WebSocket(info.body.url, { localAddress: '127.0.1.1' })
  const status = await new Promise<number>((resolve) => refused.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)))
  t.equal(status, 429, `watcher ${limit + 1} is refused (too_many_watchers)`)
  socket.close()
})

t.test('the JSON routes show what the public reads show, plus histories, and no secret', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 200, liquidityAtomic: usdc(5000) })
  const { borrower, borrowerClient, job } = await fundedJob(h, { jobId: 'job_inspect_2', receivableAtomic: usdc(2000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_inspect_2', usdc(500), usdc(100)))
  const offerId = decision.body.offer.offerId as string
  const lease = (await borrowerClient.post('/credit/match', { offerId })).body.lease
  t.equal(lease.lender, lender.account.address, 'the cheapest lender got it')

  const counts = await get('/inspect/counts')
  t.equal(counts.status, 200)
  t.same(Object.keys(counts.body.machines), ['job', 'offer', 'lease', 'advance'])
  t.same(Object.keys(counts.body.machines.lease), ['leased', 'paid', 'expired'], 'every state listed')

  const offer = await get(`/inspect/actors/${offerId}`)
  const publicOffer = await get(`/credit/offers/${offerId}`)
  const { state, ...publicContext } = publicOffer.body
  t.equal(offer.body.state, state)
  t.same(offer.body.context, publicContext, 'an offer\'s context is exactly what GET /credit/offers/{id} shows')
  t.same(offer.body.history.map((e: any) => [e.from, e.to, e.event]), [[null, 'offered', 'created'], ['offered', 'leased', 'LEASE']])
  const jobView = await get(`/inspect/actors/${job.jobId}`)
  const { state: _jobState, ...publicJob } = (await get(`/credit/jobs/${job.jobId}`)).body
  t.same(jobView.body.context, publicJob, 'a job\'s context is exactly what GET /credit/jobs/{id} shows')
  const leaseView = await get(`/inspect/actors/${lease.leaseId}`)
  const { state: _leaseState, ...matchedLease } = lease
  t.same(leaseView.body.context, matchedLease, 'a lease\'s context is what the match answered its borrower (no report grace)')

  const feed = await get('/inspect/transitions?limit=200')
  t.ok(feed.body.transitions.some((e: any) => e.id === offerId && e.event === 'LEASE'), 'the feed has the match')
  const secrets = [lender.registration.sessionKey.privateKey.slice(2).toLowerCase(), borrowerClient.token as string]
  t.ok(secrets.every((s) => typeof s === 'string' && s.length > 20), 'the secrets to look for are known')
  const everything = JSON.stringify([counts.body, offer.body, jobView.body, leaseView.body, feed.body]).toLowerCase()
  for (const secret of secrets) t.notOk(everything.includes(secret.toLowerCase()), 'no session key and no bearer token')
  t.notMatch(everything, /privatekey|"token|secret|password/, 'no field that names a secret')

  const missing = await get('/inspect/actors/lse_999999')
  t.equal(missing.status, 404)
  t.equal(missing.body.code, 'actor_not_found')
  t.equal((await get('/inspect/actors/nothing_like_an_id')).status, 404)

  // A restart: live counts come back from the store, and the lease's history with them.
  const before = (await get('/inspect/counts')).body
  await h.restart()
  t.same((await get('/inspect/counts')).body, before, 'the same counts after a restart')
  const again = await get(`/inspect/actors/${lease.leaseId}`)
  t.same(again.body.history, leaseView.body.history, 'the lease\'s history survived the restart')
})
