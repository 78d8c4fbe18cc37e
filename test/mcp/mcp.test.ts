// The MCP server, driven over stdio by the MCP SDK's own client against a devnet service: it lists its tools with
// the routes' input schemas, and a borrower with a funded job requests credit and is matched with a ready lender
// through the tools alone.
import t, { type Test } from 'tap'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditRequest } from '../../src/api/schemas.ts'
import { creditRequest, fund, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

async function mcpClient(t: Test, walletKey?: string): Promise<Client> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', AGENT_CREDIT_URL: h.url }
  if (walletKey !== undefined) env['AGENT_CREDIT_WALLET_KEY'] = walletKey
  const transport = new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', 'src/mcp/main.ts'], cwd: root, env, stderr: 'inherit' })
  const client = new Client({ name: 'mcp-test', version: '0.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

const parsed = (reply: any): any => JSON.parse(reply.content[0].text)

t.test('without a wallet key: the read tools only, with their schemas', async (t) => {
  const client = await mcpClient(t)
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
  t.same(request!.inputSchema.properties, CreditRequest.properties, 'with the route\'s own body schema')
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
