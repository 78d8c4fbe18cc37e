// outsider24: a borrower's and a lender's whole flow over plain HTTP, from llms.txt and /openapi.json alone (no SDK,
// no source). Every answer is validated against the document (doc.ts); findings are printed, exit 1 if any.
// URL=http://127.0.0.1:8463 node --import tsx test/api/outsider24-scripts/http-flow.ts   (a service from `npm start`)
import { privateKeyToAccount } from 'viem/accounts'
import { call, catalog, erc20, finding, fresh, fund, keys, net, ok, pub, report, send, signIn, until, usdcAddr } from './doc.ts'

const M = 1_000_000n
const slug = net.slug as string

// Lender: register, fund the session wallet, send the setup transactions.
const lender = await fresh(0n, keys.lender)
const lt = await signIn(lender)
const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B'] }, lt, 201)
console.log('registered', Object.keys(reg))
const sessionKey = privateKeyToAccount(reg.sessionKey.privateKey)
const fundingAddress = Array.isArray(reg.fundingAddresses) ? reg.fundingAddresses.find((f: any) => f.network === slug)?.address ?? reg.fundingAddresses[0]?.address : reg.fundingAddresses[slug]
console.log('fundingAddresses', JSON.stringify(reg.fundingAddresses), 'session key', sessionKey.address)
if (fundingAddress?.toLowerCase() !== sessionKey.address.toLowerCase()) finding(`funding address ${fundingAddress} is not the session key's ${sessionKey.address}`)
await fund(sessionKey.address, 500n * M, keys.lender)
for (const tx of reg.setupTransactions) await send(sessionKey, tx)
await until('lender in the book', async () => {
  const w = await ok('GET', `/lenders/${lender.address}/wallet`)
  return BigInt(w.activity.availableAtomic) > 0n && w
})
console.log('lender wallet:', JSON.stringify(await ok('GET', `/lenders/${lender.address}/wallet`)).slice(0, 400))

// Borrower: a job its client funds, then collateral (a fresh borrower's receivable counts only against repaid principal).
const borrower = await fresh(410n * M, keys.borrower)
const client = await fresh(2000n * M, keys.jobClient)
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${2000n * M}&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
const bt = await signIn(borrower)
const dueAt = new Date(Date.now() + 7 * 86400_000).toISOString()
const job = await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(2000n * M), dueAt, fundingTxHash }, bt, 201)
console.log('job', job.state ?? JSON.stringify(job).slice(0, 200))
const ct = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${300n * M}`)
let colTx = ''
for (const tx of ct.transactions) colTx = await send(borrower, tx)
const col = await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(300n * M), txHash: colTx }, bt, 201)
console.log('collateral', JSON.stringify(col).slice(0, 200))

const supplier = (await ok('GET', '/suppliers'))[0]
const req = await ok('POST', '/credit/request', { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(100n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(10n * M) }, bt)
console.log('decision', req.decision, req.reasons ?? '', req.offer?.riskBand)
if (req.decision !== 'approved') { report(); process.exit(1) }
const offerId = req.offer.offerId
const m = await ok('POST', '/credit/match', { offerId }, bt)
console.log('match', JSON.stringify(m).slice(0, 300))
if (!m.lease) finding('match: lease null with one funded eligible lender')
if (m.lease && m.lease.lender !== lender.address) throw new Error(`leased to another lender ${m.lease.lender}: run against a fresh service`)

// Lender pays the supplier from its actions, then reports it.
const actions = await ok('GET', `/lenders/${lender.address}/actions`, undefined, lt)
const list = Array.isArray(actions) ? actions : actions.actions
const pay = list.find((a: any) => a.kind === 'pay_supplier')
if (pay && pay.lease.offerId !== offerId) finding('the pay_supplier action names another offer')
if (!pay) throw new Error('no pay_supplier action: ' + JSON.stringify(actions).slice(0, 400))
const before = await pub.readContract({ address: usdcAddr, abi: erc20, functionName: 'balanceOf', args: [supplier.addresses[slug][0]] })
const payTx = await send(sessionKey, pay.transaction)
const after = await pub.readContract({ address: usdcAddr, abi: erc20, functionName: 'balanceOf', args: [supplier.addresses[slug][0]] })
console.log('supplier paid', after - before)
const adv = await ok('POST', `/credit/offers/${offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: payTx }, lt)
console.log('advance', JSON.stringify(adv).slice(0, 300))
const advanceId = adv.advanceId ?? adv.advance?.advanceId
const offerView = await ok('GET', `/credit/offers/${offerId}`)
console.log('offer', offerView.state)

// Borrower repays exactly what is owed.
const rt = await ok('GET', `/credit/advances/${advanceId}/repay-transactions`)
console.log('repay amount', rt.amountAtomic)
let repTx = ''
for (const tx of rt.transactions) repTx = await send(borrower, tx)
const rep = await ok('POST', `/credit/advances/${advanceId}/repay`, { txHash: repTx }, bt)
console.log('repaid', JSON.stringify(rep).slice(0, 300))
const advView = await ok('GET', `/credit/advances/${advanceId}`)
console.log('advance state', advView.state)
if (advView.state !== 'repaid') finding(`advance after full repayment is ${advView.state}`)
await ok('GET', `/passport/${borrower.address}`)
await ok('GET', `/credit/jobs/${jobId}`)

// Lender: see the capital back, withdraw all of it.
const w2 = await ok('GET', `/lenders/${lender.address}/wallet`)
console.log('lender wallet after', JSON.stringify(w2).slice(0, 500))
console.log('actions after the repayment:', JSON.stringify(await ok('GET', `/lenders/${lender.address}/actions`, undefined, lt)).slice(0, 700))
const act = w2.activity
const all = BigInt(act.availableAtomic) + BigInt(act.reservedAtomic) + BigInt(act.deployedAtomic) + BigInt(act.lossesAtomic)
const policyAll = BigInt(act.policyAvailableAtomic) + BigInt(act.reservedAtomic) + BigInt(act.deployedAtomic) + BigInt(act.lossesAtomic)
console.log('withdraw: available + ... =', all, ' policyAvailable + ... =', policyAll)
const over = await call('POST', `/lenders/${lender.address}/withdraw`, { amountAtomic: String(policyAll + 1n) }, lt)
console.log('withdraw one more than policyAll:', over.status, over.body.code, over.body.detail)
const wd = await call('POST', `/lenders/${lender.address}/withdraw`, { amountAtomic: String(policyAll) }, lt)
console.log('withdraw', wd.status, JSON.stringify(wd.body).slice(0, 400))
if (wd.status === 200) {
  const wdTx = wd.body.actions.find((a: any) => a.kind === 'withdraw')
  if (wdTx) await send(sessionKey, wdTx.transaction)
  const bal = await pub.readContract({ address: usdcAddr, abi: erc20, functionName: 'balanceOf', args: [lender.address] })
  console.log('lender wallet balance after withdraw', bal)
  const w3 = await ok('GET', `/lenders/${lender.address}/wallet`)
  console.log('after withdraw:', JSON.stringify(w3.activity), JSON.stringify(w3.holdings))
  console.log('actions after withdraw:', JSON.stringify(await ok('GET', `/lenders/${lender.address}/actions`, undefined, lt)).slice(0, 600))
}
await ok('GET', `/lenders/${lender.address}/actions`, undefined, lt)
await ok('GET', '/lenders')
await ok('GET', '/lenders/wallets')
await ok('GET', '/credit/state')
await ok('GET', '/health')
void catalog
report()
process.exit(0)
