// outsider12: llms.txt says a failed job's leased offers are "closing": "the lease stays payable until its deadline; a
// payment in time funds the offer (on the failed job, its advance is born defaulted)". Does a lender's payment go through?
import { devnetOf, freshAgent, registeredJob, registeredLender, sendUnsigned, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const { net, key } = await devnetOf(url)
const lender = await freshAgent(url, net, key, 'lender', 2_000_000_000n)
const borrower = await freshAgent(url, net, key, 'borrower', 500_000_000n)
const client = await freshAgent(url, net, key, 'jobClient', 1_000_000_000n)
const session = await registeredLender(lender, net, 2_000_000_000n, Number(process.argv[3] ?? 1))
const jobId = await registeredJob(client, borrower, net, 1_000_000_000n)
let colTx = ''
for (const tx of (await borrower.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=400000000`)).body.transactions) colTx = (await sendUnsigned(net, borrower.account, tx)).hash
console.log('collateral', (await borrower.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: '400000000', txHash: colTx })).status)
await new Promise((r) => setTimeout(r, 1500))
const supplier = ((await (await fetch(`${url}/suppliers`)).json()) as Json[])[0]!
const decision = (await borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: '1100000000', purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '50000000' })).body
console.log('decision', decision.decision, JSON.stringify(decision.reasons))
const offerId = decision.offer.offerId
const match = (await borrower.post('/credit/match', { offerId })).body
console.log('lease', JSON.stringify(match.lease), 'our lender', lender.address, 'session', session.address)
const before = ((await lender.get(`/lenders/${lender.address}/actions`)).body as Json[]).find((a) => a['kind'] === 'pay_supplier' && a['lease']['offerId'] === offerId)
console.log('pay_supplier action before the failure:', before ? 'listed' : 'not listed')
const fail = await client.post(`/credit/jobs/${jobId}/fail`, { reason: 'cancelled' })
console.log('fail', fail.status, JSON.stringify(fail.body).slice(0, 200))
const actions = (await lender.get(`/lenders/${lender.address}/actions`)).body as Json[]
const pay = actions.find((a) => a['kind'] === 'pay_supplier' && a['lease']['offerId'] === offerId)
console.log('pay_supplier action after the failure:', pay ? 'listed' : 'not listed', JSON.stringify(actions.map((a) => a['kind'])))
{ const o = (await borrower.get(`/credit/offers/${offerId}`)).body; console.log('offer state', o.state, JSON.stringify(o.lease)) }
const tx = pay ?? before
if (tx) {
  try {
    console.log('paySupplier', JSON.stringify(await sendUnsigned(net, session, tx['transaction'])))
  } catch (e) {
    console.log('paySupplier reverted:', String((e as Error).message).split('\n').slice(0, 3).join(' | '))
  }
}
const job = (await borrower.get(`/credit/jobs/${jobId}`)).body
console.log('job state', job.state)
await new Promise((r) => setTimeout(r, 40000))
const o = (await borrower.get(`/credit/offers/${offerId}`)).body
console.log('offer after the deadline', o.state, JSON.stringify(o.lease ?? o.currentLease ?? null).slice(0, 300))
const reply = await lender.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: '0x' + '11'.repeat(32) })
console.log('report', reply.status, reply.body.code)
