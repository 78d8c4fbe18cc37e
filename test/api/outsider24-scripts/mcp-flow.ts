// outsider24: the two flows through the MCP tools (`npm run mcp`, one server per wallet), as their descriptions say;
// the chain steps the tools serve unsigned are signed here (the user's signer), the session key read from the file
// register_lender wrote. Against a fresh `npm start`.  URL=http://127.0.0.1:8463 node --import tsx test/api/outsider24-scripts/mcp-flow.ts
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { privateKeyToAccount } from 'viem/accounts'
import type { PrivateKeyAccount } from 'viem/accounts'
import { base, finding, fresh, fund, keys, report, send, until } from './doc.ts'

const M = 1_000_000n
const keyDir = mkdtempSync(join(tmpdir(), 'o24-keys-'))
async function server(account: PrivateKeyAccount, key: string) {
  const t = new StdioClientTransport({ command: 'npm', args: ['run', '--silent', 'mcp'], cwd: process.cwd(), env: { ...process.env, AGENT_CREDIT_URL: base, AGENT_CREDIT_WALLET_KEY: key, AGENT_CREDIT_SESSION_KEY_DIR: keyDir } as Record<string, string> })
  const c = new Client({ name: 'o24', version: '1' })
  await c.connect(t)
  return {
    c,
    async tool(name: string, args: Record<string, unknown> = {}): Promise<any> {
      const r: any = await c.callTool({ name, arguments: args })
      if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent ?? r.content).slice(0, 600)}`)
      if (r.structuredContent === undefined) finding(`${name}: no structuredContent`)
      const sc = r.structuredContent ?? JSON.parse(r.content[0].text)
      // The answer is structuredContent.result (beside idempotencyKey for an action).
      return sc.result
    },
  }
}
const { generatePrivateKey } = await import('viem/accounts')
const lk = generatePrivateKey(), bk = generatePrivateKey()
const lenderA = privateKeyToAccount(lk), borrowerA = privateKeyToAccount(bk)
await fund(lenderA.address, 0n); await fund(borrowerA.address, 410n * M)
const client = await fresh(2000n * M, keys.jobClient)
const L = await server(lenderA, lk), B = await server(borrowerA, bk)
try {
  const cat = await B.tool('get_catalog')
  const net = cat.networks[0].slug
  const reg = await L.tool('register_lender', { availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [net], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B'] })
  console.log('register_lender', Object.keys(reg), JSON.stringify(reg.sessionKey))
  const file = JSON.parse(readFileSync(reg.sessionKey.keyFile, 'utf8'))
  const session = privateKeyToAccount(file.privateKey)
  await fund(session.address, 500n * M, keys.lender)
  for (const tx of reg.setupTransactions) await send(session, tx)
  await until('lender available', async () => BigInt((await L.tool('get_lender_wallet', { address: lenderA.address })).activity.availableAtomic) > 0n)

  const jobId = `job_${crypto.randomUUID()}`
  const ft = await B.tool('funding_transactions', { jobId, network: net, asset: 'USDC', receivableAtomic: String(2000n * M), agent: borrowerA.address, client: client.address })
  let fundingTxHash = ''
  for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
  await B.tool('create_job', { jobId, network: net, asset: 'USDC', agent: borrowerA.address, receivableAtomic: String(2000n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash })
  const ct = await B.tool('collateral_transactions', { jobId, amountAtomic: String(300n * M) })
  let txHash = ''
  for (const tx of ct.transactions) txHash = await send(borrowerA, tx)
  await B.tool('post_collateral', { jobId, amountAtomic: String(300n * M), txHash })
  const [supplier] = await B.tool('list_suppliers')
  const rm = await B.tool('request_and_match', { agent: borrowerA.address, network: net, asset: 'USDC', productType: 'job', amountAtomic: String(100n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(10n * M) })
  console.log('request_and_match', Object.keys(rm), rm.decision?.decision, rm.match?.lease?.lender === lenderA.address)
  const acts = await L.tool('lender_actions')
  const list = Array.isArray(acts) ? acts : acts.actions ?? acts.items
  const pay = list.find((a: any) => a.kind === 'pay_supplier')
  const payTx = await send(session, pay.transaction)
  const adv = await L.tool('report_supplier_payment', { offerId: rm.decision.offer.offerId, txHash: payTx })
  console.log('advance', adv.advanceId, adv.state)
  const rt = await B.tool('repay_transactions', { advanceId: adv.advanceId })
  let repTx = ''
  for (const tx of rt.transactions) repTx = await send(borrowerA, tx)
  const rep = await B.tool('report_repayment', { advanceId: adv.advanceId, txHash: repTx })
  console.log('repaid', rep.repaid, (await B.tool('get_advance', { advanceId: adv.advanceId })).state)
  const w = (await L.tool('get_lender_wallet', { address: lenderA.address })).activity
  const wd = await L.tool('withdraw_liquidity', { amountAtomic: String(BigInt(w.policyAvailableAtomic)) })
  for (const a of wd.actions) if (a.kind === 'withdraw') await send(session, a.transaction)
  console.log('withdrawn', JSON.stringify((await L.tool('get_lender_wallet', { address: lenderA.address })).activity))
  await B.tool('get_passport', { address: borrowerA.address })
} finally {
  await L.c.close(); await B.c.close()
}
report()
process.exit(0)
