// The MCP server, driven over stdio by the MCP SDK's own client against a devnet service: it lists its tools with
// the routes' input schemas, and a borrower with a funded job requests credit and is matched with a ready lender
// through the tools alone; a lender registers, takes its lease's paySupplier from lender_actions and reports it, and
// the job's client completes the job, each through its own MCP server. The session key's private key never enters a
// tool's answer: the server writes it to a file only the user can read and answers the file's path.
import t, { type Test } from 'tap'
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditRequest } from '../../src/api/schemas.ts'
import { ChainAgent, type WireTransaction } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedAccount, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

/** A directory of the test's own (mkdtemp makes it 0700), removed after the test. */
async function ownDirectory(t: Test): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'mcp-session-keys-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  return directory
}

async function mcpClient(t: Test, walletKey?: string, sessionKeyDir?: string): Promise<Client> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', AGENT_CREDIT_URL: h.url, AGENT_CREDIT_SESSION_KEY_DIR: sessionKeyDir ?? await ownDirectory(t) }
  if (walletKey !== undefined) env['AGENT_CREDIT_WALLET_KEY'] = walletKey
  const transport = new StdioClientTransport({ command: process.execPath, args: [...TS_LOADER_ARGS, 'src/mcp/main.ts'], cwd: root, env, stderr: 'inherit' })
  const client = new Client({ name: 'mcp-test', version: '0.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

/**
 * The MCP server without a wallet key, one for the file: the read-only tests ask it the same way, and each server is a
 * process that loads the SDK and the client (about 2 CPU s).
 */
let readOnly: Promise<Client> | undefined
const readOnlyClient = (): Promise<Client> => (readOnly ??= mcpClient(t))

const parsed = (reply: any): any => JSON.parse(reply.content[0].text)
const lenderPolicy = () => ({ availableLiquidityAtomic: usdc(2000).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 50, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'] })

t.test('without a wallet key: the read tools only, with their schemas', async (t) => {
  const client = await readOnlyClient()
  const { tools } = await client.listTools()
  const names = tools.map((tool) => tool.name)
  t.ok(names.includes('get_catalog') && names.includes('get_offer') && names.includes('get_job'), 'the reads are offered')
  t.notOk(names.includes('request_credit'), 'no action without a wallet')
  const offer = tools.find((tool) => tool.name === 'get_offer')!
  t.same(offer.inputSchema.required, ['offerId'])
  const catalog = parsed(await client.callTool({ name: 'get_catalog', arguments: {} }))
  t.equal(catalog.networks[0].slug, h.network.slug, 'a read answers from the service')
  const suppliers = parsed(await client.callTool({ name: 'list_suppliers', arguments: {} }))
  t.match(suppliers, [{ domain: 'supplier.devnet', addresses: { [h.network.slug]: [h.devnet.accounts.supplier.address] } }], 'the supplier directory, to name in request_credit')
  const unknown = await client.callTool({ name: 'get_job', arguments: { jobId: 'job_unknown' } })
  t.equal(unknown.isError, true)
  t.equal(parsed(unknown).code, 'job_not_found', 'a refusal carries the stable code')
})

t.test('with a wallet key: request and match through the tools', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(2000) })
  const borrowerKey = generatePrivateKey()
  const borrower = privateKeyToAccount(borrowerKey)
  await fund(h.devnet, h.network, borrower.address, 0n)
  await fundedJob(h, { jobId: 'job_mcp_1', receivableAtomic: usdc(1000), borrower })

  const client = await mcpClient(t, borrowerKey)
  const { tools } = await client.listTools()
  const request = tools.find((tool) => tool.name === 'request_credit')
  t.ok(request, 'the actions are offered')
  const { idempotencyKey, ...bodyProperties } = request!.inputSchema.properties as Record<string, unknown>
  t.same(bodyProperties, CreditRequest.properties, 'with the route\'s own body schema')
  t.match(idempotencyKey, { type: 'string' }, 'and the optional idempotencyKey of every action (test/mcp/idempotency-key.test.ts)')
  t.same([...(request!.inputSchema.required ?? [])].sort(), [...CreditRequest.required].sort())

  const job = parsed(await client.callTool({ name: 'get_job', arguments: { jobId: 'job_mcp_1' } }))
  t.equal(job.borrower, borrower.address)

  const reply = await client.callTool({ name: 'request_and_match', arguments: creditRequest(h, borrower.address, 'job_mcp_1', usdc(400), usdc(40)) })
  t.notOk(reply.isError, 'request_and_match succeeded')
  const { decision, match } = parsed(reply)
  t.equal(decision.decision, 'approved')
  t.equal(match.lease.lender, lender.account.address, 'leased to the ready lender')

  const offer = parsed(await client.callTool({ name: 'get_offer', arguments: { offerId: decision.offer.offerId } }))
  t.equal(offer.offerId, decision.offer.offerId)

  const bad = await client.callTool({ name: 'request_credit', arguments: { ...creditRequest(h, borrower.address, 'job_mcp_1', usdc(400), usdc(40)), amountAtomic: 'four hundred' } })
  t.equal(bad.isError, true, 'input the schema refuses is refused')
  t.equal(parsed(bad).code, 'validation_failed')
})

t.test('with wallet keys: the lender, borrower and client tools carry a whole advance from registration to repayment', async (t) => {
  const key = async (tokensAtomic: bigint) => {
    const privateKey = generatePrivateKey()
    await fund(h.devnet, h.network, privateKeyToAccount(privateKey).address, tokensAtomic)
    return { privateKey, account: privateKeyToAccount(privateKey) }
  }
  const [lender, borrower, client] = [await key(usdc(2000)), await key(0n), await key(usdc(1000))]

  // The lender registers through its tools; the session key goes to a file of the user's, the model sees its path.
  const keyDir = await ownDirectory(t)
  const lenderTools = await mcpClient(t, lender.privateKey, keyDir)
  const registered = await lenderTools.callTool({ name: 'register_lender', arguments: lenderPolicy() })
  const registration = parsed(registered)
  t.equal(registration.sessionKey.keyFile, join(keyDir, `${registration.sessionKey.address}.json`), 'the answer names the key file')
  t.notOk('privateKey' in registration.sessionKey, 'and carries no private key')
  const keyFile = JSON.parse(await readFile(registration.sessionKey.keyFile, 'utf8'))
  t.equal((await stat(registration.sessionKey.keyFile)).mode & 0o777, 0o600, 'the key file: the user alone reads it')
  const session = privateKeyToAccount(keyFile.privateKey)
  t.equal(session.address, registration.sessionKey.address, 'the file holds the session key')
  t.notOk(JSON.stringify(registered).toLowerCase().includes(keyFile.privateKey.slice(2).toLowerCase()), 'the key appears nowhere in what the model is given')

  // The user's signer (not an MCP step) sets up the session wallet with the key from the file.
  const owner = new ChainAgent(h.network, lender.account)
  await owner.sendGas(session.address, 10n ** 18n)
  await owner.transferToken(USDC, session.address, usdc(2000))
  const sessionChain = new ChainAgent(h.network, session)
  for (const tx of registration.setupTransactions as (WireTransaction & { network: string })[]) if (tx.network === h.network.slug) await sessionChain.sendUnsigned(tx)
  await h.app.service.watcher.waitFor(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, session.address) === usdc(2000), 10_000)

  // The client escrows on chain with the unsigned approve + fundJob of the funding_transactions tool (read: no key);
  // the borrower registers the job and borrows through its tools.
  const jobId = 'job_mcp_2'
  const borrowerTools = await mcpClient(t, borrower.privateKey)
  const funding = parsed(await borrowerTools.callTool({
    name: 'funding_transactions',
    arguments: { jobId, network: h.network.slug, asset: USDC, receivableAtomic: usdc(1000).toString(), agent: borrower.account.address, client: client.account.address },
  }))
  t.equal(funding.transactions.length, 2, 'funding_transactions: the approve, then the fundJob')
  const fundingTxHash = (await new ChainAgent(h.network, client.account).sendAll(funding.transactions)).at(-1)
  const job = parsed(await borrowerTools.callTool({
    name: 'create_job',
    arguments: { jobId, network: h.network.slug, asset: USDC, agent: borrower.account.address, receivableAtomic: usdc(1000).toString(), dueAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), fundingTxHash },
  }))
  t.equal(job.borrower, borrower.account.address, 'create_job registered the job for the borrower')
  const { decision, match } = parsed(await borrowerTools.callTool({ name: 'request_and_match', arguments: creditRequest(h, borrower.account.address, jobId, usdc(300), usdc(30)) }))
  t.equal(match.lease.lender, lender.account.address, 'the cheapest lender (50 bps) holds the lease')

  // The lender pays from its pending actions and reports the payment.
  const actions = parsed(await lenderTools.callTool({ name: 'lender_actions', arguments: {} }))
  const action = actions.find((a: any) => a.lease.offerId === decision.offer.offerId)
  t.equal(action?.kind, 'pay_supplier', 'lender_actions lists the lease\'s paySupplier')
  const paymentTx = await sessionChain.sendUnsigned(action.transaction)
  const advance = parsed(await lenderTools.callTool({ name: 'report_supplier_payment', arguments: { offerId: decision.offer.offerId, txHash: paymentTx } }))
  t.equal(advance.state, 'active', 'report_supplier_payment created the advance')
  t.equal(advance.payment.txHash, paymentTx)

  // The job's client completes the job: the escrow repays the advance. The borrower may not.
  const refused = await borrowerTools.callTool({ name: 'complete_job', arguments: { jobId } })
  t.equal(refused.isError, true, 'the borrower may not complete the job')
  t.equal(parsed(refused).code, 'forbidden', 'with the stable code')
  const clientTools = await mcpClient(t, client.privateKey)
  const receipt = parsed(await clientTools.callTool({ name: 'complete_job', arguments: { jobId } }))
  t.equal(receipt.receipts[0].advanceId, advance.advanceId, 'complete_job settled the advance')
  t.equal(parsed(await borrowerTools.callTool({ name: 'get_advance', arguments: { advanceId: advance.advanceId } })).state, 'repaid')

  // The lender stops lending through its tools: withdraw_liquidity lowers its policy to nothing and answers the
  // session key's transfer back (an outsider's finding: no tool could, so a lender on MCP could never leave).
  const { activity } = await (await fetch(`${h.url}/lenders/${lender.account.address}/wallet`)).json() as { activity: { policyAvailableAtomic: string } }
  t.ok(BigInt(activity.policyAvailableAtomic) > usdc(2000), 'the repaid advance brought its principal and fee back to lend')
  const withdrawn = parsed(await lenderTools.callTool({ name: 'withdraw_liquidity', arguments: { amountAtomic: activity.policyAvailableAtomic } }))
  t.equal(withdrawn.lender.policyAvailableAtomic, '0', 'nothing is left for the service to lend')
  // The answer's actions come from the watcher's last reading of the session wallet, none while the settlement the
  // engine applied is newer than it (src/service/wallet-actions.ts): then lender_actions serves the transfer back
  // once the watcher has read the wallet again.
  let back = withdrawn.actions.find((a: any) => a.kind === 'withdraw')
  for (const deadline = Date.now() + 20_000; back === undefined && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    back = (parsed(await lenderTools.callTool({ name: 'lender_actions', arguments: {} })) as any[]).find((a: any) => a.kind === 'withdraw')
  }
  t.equal(back?.signer, 'session_key', 'the transfer back is the session key\'s to sign')
  t.equal(back?.transaction.from, session.address)
})

t.test('register_lender refuses a key directory other users may enter, before the lender is registered', async (t) => {
  const privateKey = generatePrivateKey()
  const lender = privateKeyToAccount(privateKey)
  const keyDir = await ownDirectory(t)
  await chmod(keyDir, 0o755)
  const tools = await mcpClient(t, privateKey, keyDir)
  const refused = await tools.callTool({ name: 'register_lender', arguments: lenderPolicy() })
  t.equal(refused.isError, true, 'refused')
  t.match(parsed(refused), { code: 'mcp_call_failed', detail: /open to other users/ }, 'saying why')
  const lenders = (await everyPage(tools, 'list_lenders', {}, 1000)).items
  t.notOk(lenders.some((profile: any) => profile.address === lender.address), 'no registration was sent: no session key was handed out with nowhere to keep it')
})

/** Every page of a paged tool, `limit` items a page, following nextAfter: the items and the number of pages read. */
async function everyPage(client: Client, name: string, args: Record<string, unknown>, limit: number): Promise<{ items: any[]; pages: number }> {
  const items: any[] = []
  let after: number | undefined
  for (let pages = 1; ; pages++) {
    const reply = await client.callTool({ name, arguments: { ...args, limit, ...(after === undefined ? {} : { after }) } })
    if (reply.isError) throw new Error(`${name}: ${JSON.stringify(reply.content)}`)
    const page = parsed(reply)
    if (page.items.length > limit) throw new Error(`${name}: ${page.items.length} items on a page of ${limit}`)
    items.push(...page.items)
    if (page.nextAfter === null) return { items, pages }
    after = page.nextAfter
  }
}

const routeList = async (path: string): Promise<any[]> => (await fetch(`${h.url}${path}`)).json() as Promise<any[]>

// An outsider's finding: list_lenders answered the first 100 lenders and could not page, and no tool read a lender's
// wallet view or a borrower's passport. The paged tools take the route's limit and after and answer the cursor.
t.test('without a wallet key: the lists page with limit and after, and the wallet and passport reads', async (t) => {
  const lenders = [await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(100) }), await readyLender(h, { minFeeBps: 310, liquidityAtomic: usdc(100) })]
  const client = await readOnlyClient()
  const { tools } = await client.listTools()
  const inputOf = (name: string) => tools.find((tool) => tool.name === name)?.inputSchema
  t.match(inputOf('list_lenders')?.properties, { limit: { type: 'integer', maximum: 1000 }, after: { type: 'integer' } }, 'list_lenders takes the route\'s page query')
  t.same(inputOf('get_passport')?.required, ['address'])

  const lenderPages = await everyPage(client, 'list_lenders', {}, 1)
  t.ok(lenderPages.pages > 2, `list_lenders read ${lenderPages.pages} pages of one lender`)
  t.same(lenderPages.items, await routeList('/lenders?limit=1000'), 'every active lender, each once, as GET /lenders lists them')
  for (const lender of lenders) t.ok(lenderPages.items.some((profile) => profile.address === lender.account.address), 'the new lenders among them')

  const wallet = parsed(await client.callTool({ name: 'get_lender_wallet', arguments: { address: lenders[0]!.account.address } }))
  t.same(wallet, await (await fetch(`${h.url}/lenders/${lenders[0]!.account.address}/wallet`)).json(), 'get_lender_wallet answers the route\'s wallet view')
  t.equal(wallet.sessionAddress, lenders[0]!.session.address)
  t.equal(wallet.holdings[0].spendableAtomic, usdc(100).toString(), 'with what its session wallet can pay')
  const unknown = await client.callTool({ name: 'get_lender_wallet', arguments: { address: generatedAddress() } })
  t.equal(parsed(unknown).code, 'lender_not_found', 'a wallet that is no lender is refused with the stable code')

  // Two backing sources, and a borrower whose two jobs failed: two passport events.
  const owner = await fundedAccount(h.devnet, h.network, 0n)
  const ownerApi = await signedIn(h.url, owner)
  for (const sourceId of ['mcp-src-1', 'mcp-src-2']) {
    const registered = await ownerApi.post('/credit/backing-sources', await backingSourceBody(h, owner.address, { sourceId, valueAtomic: usdc(50), liquidationValueAtomic: usdc(40), advanceRateBps: 5000 }))
    t.equal(registered.status, 201, `backing source ${sourceId} registered`)
  }
  const sourcePages = await everyPage(client, 'list_backing_sources', {}, 1)
  t.ok(sourcePages.pages >= 2, `list_backing_sources read ${sourcePages.pages} pages of one source`)
  t.same(sourcePages.items, await routeList('/credit/backing-sources?limit=1000'), 'every backing source, as the route lists them')

  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const jobs = [await fundedJob(h, { jobId: 'job_mcp_pp_1', receivableAtomic: usdc(10), borrower }), await fundedJob(h, { jobId: 'job_mcp_pp_2', receivableAtomic: usdc(10), borrower })]
  for (const [i, job] of jobs.entries()) {
    const failed = await job.jobClientApi.post(`/credit/jobs/job_mcp_pp_${i + 1}/fail`, { reason: 'not_delivered' })
    t.equal(failed.status, 200, `job ${i + 1} failed`)
  }
  const passport = await everyPage(client, 'get_passport', { address: borrower.address }, 1)
  t.equal(passport.pages, 2, 'one event a page')
  t.same(passport.items, await routeList(`/passport/${borrower.address}`), 'get_passport answers the events exactly as the route does')
  t.same(passport.items.map((event) => event.sequence), [1, 2])
  const second = parsed(await client.callTool({ name: 'get_passport', arguments: { address: borrower.address, limit: 1, after: 1 } }))
  t.same(second, { items: [passport.items[1]], nextAfter: null }, 'after: the page after that sequence, the last')
  const refused = await client.callTool({ name: 'list_lenders', arguments: { limit: 0 } })
  t.equal(parsed(refused).code, 'validation_failed', 'a limit the route refuses is refused')
})

function generatedAddress(): string {
  return privateKeyToAccount(generatePrivateKey()).address
}
