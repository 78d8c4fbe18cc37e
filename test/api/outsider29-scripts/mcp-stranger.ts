// outsider29: the MCP server as the documents give it to an agent (`npm run mcp`, AGENT_CREDIT_WALLET_KEY), run with a
// stranger's fresh key against a borrower's registered job: each of the borrower's and the client's actions must come
// back as a tool error (the route's problem+json), and nothing of the job change. Exits 1 while one is not refused.
// URL=http://127.0.0.1:8472 node --import tsx test/api/outsider29-scripts/mcp-stranger.ts
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { generatePrivateKey } from 'viem/accounts'
import { base, ok } from '../outsider24-scripts/doc.ts'
import { registeredJob } from './setup.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const { jobId, borrower } = await registeredJob(10n * M, 5n * M)
const before = await ok('GET', `/credit/jobs/${jobId}`)
const transport = new StdioClientTransport({ command: 'npm', args: ['run', '--silent', 'mcp'], env: { ...process.env, AGENT_CREDIT_URL: base, AGENT_CREDIT_WALLET_KEY: generatePrivateKey() } as Record<string, string> })
const client = new Client({ name: 'outsider29', version: '0' })
await client.connect(transport)
const tools = (await client.listTools()).tools.map((t) => t.name)
console.log('tools', tools.join(' '))
const attempts: [string, Record<string, unknown>][] = [
  ['fail_job', { jobId, reason: 'not_delivered' }],
  ['complete_job', { jobId }],
  ['post_collateral', { jobId, amountAtomic: '1', txHash: `0x${'1'.repeat(64)}` }],
  ['request_credit', { agent: borrower.address, network: before.network, asset: 'USDC', productType: 'job', amountAtomic: String(1n * M), purpose: 'x', supplier: 'Devnet demo supplier', supplierDomain: 'supplier.devnet', repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }],
]
for (const [name, args] of attempts) {
  if (!tools.includes(name)) { console.log(name, 'not offered'); continue }
  const r: any = await client.callTool({ name, arguments: args })
  const code = r.structuredContent?.error?.code ?? r.structuredContent?.result?.decision ?? ''
  console.log(`stranger via MCP: ${name} -> ${r.isError ? 'tool error' : 'result'} ${code}`)
  if (!r.isError && code !== 'declined') fail(`${name} through MCP was not refused: ${JSON.stringify(r.structuredContent).slice(0, 300)}`)
}
const after = await ok('GET', `/credit/jobs/${jobId}`)
if (JSON.stringify(after) !== JSON.stringify(before)) fail(`the job changed: ${JSON.stringify(after).slice(0, 300)}`)
await client.close()
console.log(bad.length ? `${bad.length} finding(s)` : 'holds')
process.exit(bad.length ? 1 : 0)
