// A 429 or 503 with Retry-After that the MCP server's SDK stopped waiting out reaches the model as a tool error that
// says how long to wait, structured (structuredContent.error.retryAfterSeconds) and in the text, as llms.txt's
// "Waiting and retrying" tells agents. Against the service with a chain read budget of one read per wallet at a time
// (chainReadsBurst 4, a quarter each): of two job registrations one wallet sends at once with unknown funding
// transactions, one is read on chain (422 proof_not_found) and the other answered 503 chain_reads_exhausted with
// Retry-After; AGENT_CREDIT_RETRY_AFTER_MAX_SECONDS=0 makes the server hand every wait to the model.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startHarness, USDC, type Harness } from '../fixtures/service.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { chainReadsPerSecond: 4, chainReadsBurst: 4 } })
})
t.teardown(async () => {
  await h?.stop()
})

t.test('a tool refused with Retry-After tells the model how long to wait, structured and in words', async (t) => {
  const walletKey = generatePrivateKey()
  const agent = privateKeyToAccount(walletKey).address
  const env = { PATH: process.env['PATH'] ?? '', AGENT_CREDIT_URL: h.url, AGENT_CREDIT_WALLET_KEY: walletKey, AGENT_CREDIT_RETRY_AFTER_MAX_SECONDS: '0' }
  const transport = new StdioClientTransport({ command: process.execPath, args: [...TS_LOADER_ARGS, 'src/mcp/main.ts'], cwd: root, env, stderr: 'inherit' })
  const client = new Client({ name: 'mcp-retry-after-test', version: '0.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())

  const job = () => ({ jobId: `job_${toHex(randomBytes(8)).slice(2)}`, network: h.network.slug, asset: USDC, agent, receivableAtomic: '1000000', dueAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), fundingTxHash: toHex(randomBytes(32)) })
  const jobs = [job(), job()]
  const replies: any[] = await Promise.all(jobs.map((args) => client.callTool({ name: 'create_job', arguments: args })))
  t.ok(replies.every((reply) => reply.isError === true), 'both refused')
  const codes = replies.map((reply) => reply.structuredContent.error.code).sort()
  t.same(codes, ['chain_reads_exhausted', 'proof_not_found'], 'one read on chain, one refused by the wallet\'s share of the chain reads')

  const waited = replies.find((reply) => reply.structuredContent.error.code === 'chain_reads_exhausted')
  const { retryAfterSeconds } = waited.structuredContent.error
  t.ok(Number.isInteger(retryAfterSeconds) && retryAfterSeconds >= 1, 'structured: the whole seconds the service asked for')
  t.match(JSON.parse(waited.content[0].text), { status: 503, code: 'chain_reads_exhausted', retryAfterSeconds }, 'the problem+json text carries the wait')
  t.match(waited.content[1]?.text, new RegExp(`Wait ${retryAfterSeconds} s, then call create_job again with the same arguments`), 'and says what to do, in words')

  const read = replies.find((reply) => reply.structuredContent.error.code === 'proof_not_found')
  t.notOk('retryAfterSeconds' in read.structuredContent.error, 'a refusal without Retry-After names no wait')
  t.equal(read.content.length, 1, 'nor says to wait')

  const refusedJob = jobs[replies.indexOf(waited)]!
  const lookup: any = await client.callTool({ name: 'get_job', arguments: { jobId: refusedJob.jobId } })
  t.equal(lookup.structuredContent.error.code, 'job_not_found', 'nothing was recorded')
})
