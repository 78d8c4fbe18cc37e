// outsider24: the other ends of llms.txt's step 7 over plain HTTP, every answer validated against /openapi.json:
// a job its client completes (the escrow repays), and a job its client fails (the lender liquidates: collateral
// first), then the passport, the views and a keyed retry. Against a fresh `npm start`.
// node --import tsx test/api/outsider24-scripts/http-end-flows.ts
import { privateKeyToAccount } from 'viem/accounts'
import { call, finding, fresh, fund, keys, net, ok, report, send, signIn, until } from './doc.ts'

const M = 1_000_000n
const slug = net.slug
const lender = await fresh(0n)
const lt = await signIn(lender)
const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] }, lt, 201)
const session = privateKeyToAccount(reg.sessionKey.privateKey)
await fund(session.address, 500n * M, keys.lender)
for (const tx of reg.setupTransactions) await send(session, tx)
await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${lender.address}/wallet`)).activity.availableAtomic) > 0n)

const borrower = await fresh(200n * M)
const bt = await signIn(borrower)
const client = await fresh(2000n * M, keys.jobClient)
const ct = await signIn(client)
const supplier = (await ok('GET', '/suppliers'))[0]
async function advanceOn(receivable: bigint, collateral: bigint, amount: bigint) {
  const jobId = `job_${crypto.randomUUID()}`
  const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${receivable}&agent=${borrower.address}&client=${client.address}`)
  let fundingTxHash = ''
  for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
  await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(receivable), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
  if (collateral > 0n) {
    const c = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${collateral}`)
    let h = ''
    for (const tx of c.transactions) h = await send(borrower, tx)
    await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(collateral), txHash: h }, bt, 201)
  }
  const r = await ok('POST', '/credit/request', { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(10n * M) }, bt)
  if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
  const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
  if (!m.lease) throw new Error('no lease')
  const acts = await ok('GET', `/lenders/${lender.address}/actions`, undefined, lt)
  const pay = acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === r.offer.offerId)
  const payTx = await send(session, pay.transaction)
  const key = crypto.randomUUID()
  const first = await call('POST', `/credit/offers/${r.offer.offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: payTx }, lt, { 'idempotency-key': key })
  const again = await call('POST', `/credit/offers/${r.offer.offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: payTx }, lt, { 'idempotency-key': key })
  if (again.headers.get('idempotent-replayed') !== 'true') finding('a keyed retry of supplier-payment carries no Idempotent-Replayed: true')
  return { jobId, advance: first.body }
}

// 1. Completed: the escrow repays.
const a1 = await advanceOn(1000n * M, 100n * M, 50n * M)
const done = await ok('POST', `/credit/jobs/${a1.jobId}/complete`, {}, ct)
console.log('complete:', JSON.stringify(done).slice(0, 300))
console.log('advance 1:', (await ok('GET', `/credit/advances/${a1.advance.advanceId}`)).state, (await ok('GET', `/credit/jobs/${a1.jobId}`)).state)

// 2. Failed: the lender liquidates.
const a2 = await advanceOn(1000n * M, 80n * M, 50n * M)
const failed = await ok('POST', `/credit/jobs/${a2.jobId}/fail`, { reason: 'not_delivered', note: 'never came' }, ct)
console.log('fail:', JSON.stringify(failed).slice(0, 300))
await until('advance defaulted', async () => (await ok('GET', `/credit/advances/${a2.advance.advanceId}`)).state === 'defaulted')
const liq = await call('POST', `/credit/advances/${a2.advance.advanceId}/liquidate`, {}, lt)
console.log('liquidate:', liq.status, JSON.stringify(liq.body).slice(0, 400))
console.log('advance 2:', (await ok('GET', `/credit/advances/${a2.advance.advanceId}`)).state, (await ok('GET', `/credit/jobs/${a2.jobId}`)).state)
const pp = await ok('GET', `/passport/${borrower.address}`)
console.log('passport kinds:', (pp.items ?? pp.events ?? pp).map?.((e: any) => e.kind ?? e.type).join(' '))
await ok('GET', `/credit/held-payments/${borrower.address}`)
await ok('GET', `/lenders/${lender.address}/agent`).catch((e) => console.log('agent:', String(e).slice(0, 200)))
console.log('lender:', JSON.stringify((await ok('GET', `/lenders/${lender.address}/wallet`)).activity))
await ok('GET', '/credit/state')
await ok('POST', '/credit/dispatch', {}, bt)
await ok('POST', '/auth/session/refresh', undefined, bt)
await ok('DELETE', '/auth/session', undefined, bt)
const after = await call('GET', `/lenders/${lender.address}/actions`, undefined, bt)
console.log('revoked token:', after.status, after.body.code)
report()
process.exit(0)
