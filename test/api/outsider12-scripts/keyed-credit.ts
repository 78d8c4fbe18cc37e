// outsider12: which answers of the uncharged credit path are stored under an Idempotency-Key (a replay says
// Idempotent-Replayed: true)? A fresh wallet, no funds.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent } from '../fixtures/outsider12-agent.ts'
const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const a = new Agent(url, privateKeyToAccount(generatePrivateKey()))
await a.signIn()
const cases: [string, unknown][] = [
  ['/credit/match', { offerId: 'off_999999' }],
  ['/credit/dispatch', {}],
  ['/credit/offers/off_1/supplier-payment', { lender: a.address, supplierPaymentId: '0x' + '22'.repeat(32) }],
  ['/credit/advances/adv_1/repay', { txHash: '0x' + '33'.repeat(32) }],
  ['/credit/jobs/job_nonexistent/complete', {}],
  ['/credit/jobs/job_nonexistent/fail', { reason: 'late' }],
  ['/credit/advances/adv_1/liquidate', {}],
  ['/credit/request', { agent: a.address, network: 'devnet-a', asset: 'USDC', productType: 'job', amountAtomic: '1000000', purpose: 'x', supplier: 'S', supplierDomain: 'supplier.devnet', repaymentSource: 'job_nonexistent', maximumFeeAtomic: '0' }],
  ['/credit/jobs/job_x/collateral', { amountAtomic: '1', txHash: '0x' + '44'.repeat(32) }],
]
for (const [path, body] of cases) {
  const key = crypto.randomUUID()
  const first = await a.post(path, body, { 'idempotency-key': key })
  const again = await a.post(path, body, { 'idempotency-key': key })
  console.log(`${path}: ${first.status} ${first.body.code ?? first.body.decision ?? ''}; replay ${again.status} replayed=${again.headers.get('idempotent-replayed')}`)
}
