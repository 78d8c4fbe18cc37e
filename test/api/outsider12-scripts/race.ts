// outsider12: races on the money path against a running service. A job with collateral and one advance; then
// `mode` = complete-fail: the client's /complete and /fail at once; liquidate-repay: the job past... (see below).
import { Agent, devnetOf, freshAgent, give, registeredJob, registeredLender, sendUnsigned, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const mode = process.argv[3] ?? 'complete-fail'
const { net, key } = await devnetOf(url)
const lender = await freshAgent(url, net, key, 'lender', 5_000_000_000n)
const borrower = await freshAgent(url, net, key, 'borrower', 1_000_000_000n)
const client = await freshAgent(url, net, key, 'jobClient', 1_000_000_000n)
const operator = new Agent(url, key('operator'))
await operator.signIn()
const session = await registeredLender(lender, net, 5_000_000_000n, Number(process.argv[4] ?? 10))
const jobId = await registeredJob(client, borrower, net, 1_000_000_000n)
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
  await give(net, key('borrower'), borrower.address, 0n, 1_000_000_000n)
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
