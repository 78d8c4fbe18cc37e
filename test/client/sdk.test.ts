// The typed SDK drives the typical flow against the devnet: a lender registers, sets up its session wallet and runs
// the lender loop on the event stream; a job's client funds a job for a borrower; the borrower requests and matches;
// the loop pays the supplier; the client completes the job. No hand-written HTTP and no ABI in this file.
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { AgentCredit, ChainAgent, CreditApiError, type AdvanceView } from '../../src/client/index.ts'
import { fundedAccount, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

t.test('the SDK runs request, match, payment from the stream and completion', async (t) => {
  const lenderAccount = await fundedAccount(h.devnet, h.network, usdc(3000))
  const borrowerAccount = await fundedAccount(h.devnet, h.network, 0n)
  const clientAccount = await fundedAccount(h.devnet, h.network, usdc(1000))
  const lender = new AgentCredit({ baseUrl: h.url, account: lenderAccount })
  const borrower = new AgentCredit({ baseUrl: h.url, account: borrowerAccount })
  const jobClient = new AgentCredit({ baseUrl: h.url, account: clientAccount })

  const catalog = await lender.catalog()
  const network = catalog.networks[0]!.slug
  const registration = await lender.registerLender({
    availableLiquidityAtomic: usdc(2000).toString(), asset: USDC, networks: [network], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
  })
  const sessionKey = privateKeyToAccount(registration.sessionKey.privateKey as `0x${string}`)
  const session = new ChainAgent(h.network, sessionKey)
  await lender.setupSessionWallet(registration, new ChainAgent(h.network, lenderAccount), session, USDC, usdc(2000))
  await h.app.service.watcher.waitFor(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, sessionKey.address) === usdc(2000), 10_000)

  const paid: AdvanceView[] = []
  const errors: unknown[] = []
  const loop = await lender.runLender(session, { onPaid: (a) => paid.push(a), onError: (e) => errors.push(e) })
  const borrowerEvents = await borrower.events()

  // The client escrows on chain; the borrower registers the job (its own consent).
  const job = await borrower.fundJob(new ChainAgent(h.network, clientAccount), {
    jobId: 'job_sdk_1', network, asset: USDC, agent: borrowerAccount.address, receivableAtomic: usdc(1000).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(),
  })
  t.equal(job.jobId, 'job_sdk_1')
  t.ok(job.borrower === borrowerAccount.address)

  const supplier = (await borrower.suppliers())[0]!
  const funded = borrowerEvents.next((e) => e.kind === 'advance')
  const { decision, match } = await borrower.requestAndMatch({
    agent: borrowerAccount.address, network, asset: USDC, productType: 'job', amountAtomic: usdc(400).toString(), purpose: 'inference compute',
    supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: 'job_sdk_1', maximumFeeAtomic: usdc(40).toString(),
  })
  t.equal(decision.decision, 'approved')
  t.equal(match?.lease?.lender, lenderAccount.address)
  const advanceEvent = await funded
  t.equal(advanceEvent.kind === 'advance' && advanceEvent.advance.state, 'active', 'the borrower hears of its advance on the stream')
  await t.resolves(() => until(() => paid.length === 1), 'the lender loop paid and reported')
  t.same(errors, [])
  t.equal(paid[0]!.offerId, decision.offer!.offerId)

  const receipt = await jobClient.completeJob('job_sdk_1')
  t.equal(receipt.receipts[0]!.advanceId, paid[0]!.advanceId)
  const repaid = await borrower.advance(paid[0]!.advanceId)
  t.equal(repaid.state, 'repaid')

  const refused = await borrower.match(decision.offer!.offerId).catch((e: unknown) => e)
  t.ok(refused instanceof CreditApiError, 'a refusal is a typed error')
  t.equal((refused as CreditApiError).status, 409)
  t.match((refused as CreditApiError).code, /^[a-z_]+$/, `with its stable code (${(refused as CreditApiError).code})`)

  loop.stop()
  borrowerEvents.close()
})

// An outsider's finding: lenders() answered the first page (100) and no SDK call could read the next. Each list is
// now a page with its cursor (xPage) or every item through an async iterator (x), here one item a page.
t.test('the SDK pages the lists: a page and its cursor, and every item through an async iterator', async (t) => {
  await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100) })
  await readyLender(h, { minFeeBps: 310, liquidityAtomic: usdc(100) })
  const owner = await fundedAccount(h.devnet, h.network, 0n)
  const ownerApi = await signedIn(h.url, owner)
  for (const sourceId of ['sdk-src-1', 'sdk-src-2']) {
    t.equal((await ownerApi.post('/credit/backing-sources', await backingSourceBody(h, owner.address, { sourceId, valueAtomic: usdc(50), liquidationValueAtomic: usdc(40), advanceRateBps: 5000 }))).status, 201)
  }
  const sdk = new AgentCredit({ baseUrl: h.url, account: owner })
  const route = async (path: string) => (await fetch(`${h.url}${path}`)).json()
  const all = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
    const collected: T[] = []
    for await (const item of items) collected.push(item)
    return collected
  }

  const lenders = await route('/lenders?limit=1000') as unknown[]
  t.ok(lenders.length >= 3, `${lenders.length} lenders`)
  const first = await sdk.lendersPage({ limit: 1 })
  t.same(first.items, lenders.slice(0, 1), 'lendersPage: one page of `limit`')
  t.type(first.nextAfter, 'number', 'with the cursor of the next')
  const second = await sdk.lendersPage({ limit: 1, after: first.nextAfter! })
  t.same(second.items, lenders.slice(1, 2), 'and the page after it')
  t.same(await all(sdk.lenders({ limit: 1 })), lenders, 'lenders(): every lender, page after page')
  t.same((await sdk.lendersPage({ limit: 1000 })).nextAfter, null, 'the last page has no cursor')

  const wallets = await route('/lenders/wallets?limit=200') as unknown[]
  t.same(await all(sdk.lenderWallets({ limit: 1 })), wallets, 'lenderWallets(): every session wallet')
  const sources = await route('/credit/backing-sources?limit=1000') as unknown[]
  t.equal(sources.length, 2)
  t.same(await all(sdk.backingSources({ limit: 1 })), sources, 'backingSources(): every backing source')
  t.same(await sdk.backingSourcesPage({ limit: 1, after: (await sdk.backingSourcesPage({ limit: 1 })).nextAfter! }), { items: sources.slice(1), nextAfter: null }, 'the last page of sources')
  t.same(await sdk.passportPage(owner.address), { items: [], nextAfter: null }, 'passportPage: an agent without events has an empty passport')
})

// No real service links in a circle, so a stand-in does: every page names after=5 as the next.
t.test('an iterator refuses a next page that does not move the cursor forward', async (t) => {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'next-after': '5' })
    response.end('[{"address":"0x0000000000000000000000000000000000000001"}]')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const sdk = new AgentCredit({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, account: privateKeyToAccount(generatePrivateKey()) })
  let read = 0
  const outcome = await (async () => {
    for await (const _lender of sdk.lenders()) if (++read > 10) return 'kept reading'
    return 'ended'
  })().catch((error: unknown) => error)
  t.match(outcome, { message: /does not follow/ }, 'the loop ends with an error')
  t.equal(read, 2, 'after the page that named no later one')
})

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
