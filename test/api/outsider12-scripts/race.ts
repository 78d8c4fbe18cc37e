// outsider12: races on the money path against a running service. A job with collateral and one advance; then
// `mode` = complete-fail: the client's /complete and /fail at once; liquidate-repay: the job past... (see below).
import { randomUUID } from 'node:crypto'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent, give, sendUnsigned, type CatalogNetwork, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const mode = process.argv[3] ?? 'complete-fail'
const catalog = (await (await fetch(`${url}/.well-known/service.json`)).json()) as Json
const llms = await (await fetch(`${url}/llms.txt`)).text()
const net = catalog['networks'][0] as CatalogNetwork
const keyOf = (role: string) => new RegExp(`- ${role}: 0x[0-9a-fA-F]{40} \\(private key (0x[0-9a-f]{64})\\)`).exec(llms)![1] as `0x${string}`
const deployer = privateKeyToAccount(keyOf('deployer'))
const fresh = () => privateKeyToAccount(generatePrivateKey())
const lender = new Agent(url, fresh()), borrower = new Agent(url, fresh()), client = new Agent(url, fresh()), operator = new Agent(url, privateKeyToAccount(keyOf('operator')))
for (const a of [lender, borrower, client]) await give(net, deployer, a.address, 10n ** 19n, 0n)
const big = 5_000_000_000n
await give(net, privateKeyToAccount(keyOf('lender')), lender.address, 0n, big)
await give(net, privateKeyToAccount(keyOf('jobClient')), client.address, 0n, 1_000_000_000n)
await give(net, privateKeyToAccount(keyOf('borrower')), borrower.address, 0n, 1_000_000_000n)
await Promise.all([lender.signIn(), borrower.signIn(), client.signIn(), operator.signIn()])
const reg = (await lender.post('/lenders/register', { availableLiquidityAtomic: big.toString(), asset: 'USDC', networks: [net.slug], minFeeBps: Number(process.argv[4] ?? 10), maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] })).body
const session = privateKeyToAccount(reg.sessionKey.privateKey)
await give(net, lender.account, session.address, 10n ** 18n, big)
for (const tx of reg.setupTransactions) await sendUnsigned(net, session, tx)
const jobId = `job_${randomUUID()}`
let fundingTxHash = ''
for (const tx of (await client.get(`/credit/jobs/${jobId}/funding-transactions?network=${net.slug}&asset=USDC&receivableAtomic=1000000000&agent=${borrower.address}&client=${client.address}`)).body.transactions) fundingTxHash = (await sendUnsigned(net, client.account, tx)).hash
console.log('job', (await borrower.post('/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: '1000000000', dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash })).status)
let colTx = ''
for (const tx of (await borrower.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=600000000`)).body.transactions) colTx = (await sendUnsigned(net, borrower.account, tx)).hash
console.log('collateral', (await borrower.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: '600000000', txHash: colTx })).status)
const supplier = ((await (await fetch(`${url}/suppliers`)).json()) as Json[])[0]!
const decision = (await borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: '3000000000', purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '0' })).body
if (decision.decision !== 'approved') {
  // Capacity is 80% of the receivable (once counted) + collateral; ask what fits.
}
const amount = decision.decision === 'approved' ? '3000000000' : '500000000'
const d2 = decision.decision === 'approved' ? decision : (await borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: amount, purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '1000000' })).body
console.log('decision', d2.decision, JSON.stringify(d2.reasons), d2.riskBand)
const offerId = d2.offer.offerId
const match = (await borrower.post('/credit/match', { offerId })).body
console.log('lease to us', match.lease?.lender === lender.address)
const pay = ((await lender.get(`/lenders/${lender.address}/actions`)).body as Json[]).find((a) => a['kind'] === 'pay_supplier' && a['lease']['offerId'] === offerId)!
const paid = await sendUnsigned(net, session, pay['transaction'])
const advance = (await lender.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: paid.hash })).body
console.log('advance', advance.advanceId, advance.state)
if (mode === 'complete-fail') {
  const [complete, fail] = await Promise.all([client.post(`/credit/jobs/${jobId}/complete`, {}), client.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })])
  console.log('complete', complete.status, complete.body.code ?? '', '| fail', fail.status, fail.body.code ?? fail.body.type)
} else if (mode === 'fail-repay') {
  // The borrower repays in full while the client fails the job: the repayment is mined around the failJob.
  const txs = (await borrower.get(`/credit/advances/${advance.advanceId}/repay-transactions`)).body.transactions as Json[]
  await give(net, privateKeyToAccount(keyOf('borrower')), borrower.address, 0n, 1_000_000_000n)
  await sendUnsigned(net, borrower.account, txs[0]!)
  const [repaid, fail] = await Promise.all([sendUnsigned(net, borrower.account, txs[1]!), client.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' })])
  console.log('repay', repaid.status, '| fail', fail.status, fail.body.code ?? fail.body.type, JSON.stringify(fail.body.defaultedAdvanceIds))
  const liq = await lender.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  console.log('liquidate', liq.status, liq.body.code ?? '', JSON.stringify(liq.body.steps ?? '').slice(0, 300))
}
await new Promise((r) => setTimeout(r, 3000))
console.log('job', (await borrower.get(`/credit/jobs/${jobId}`)).body.state, '| advance', JSON.stringify((await borrower.get(`/credit/advances/${advance.advanceId}`)).body).slice(0, 400))
const rec = (await operator.post('/operator/reconcile', { network: net.slug })).body
console.log('reconcile', JSON.stringify(rec.networks?.[0]?.differences ?? rec).slice(0, 800))
