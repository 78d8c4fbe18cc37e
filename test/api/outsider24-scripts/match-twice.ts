// outsider24: a borrower that did not see its match's answer matches again (no Idempotency-Key): what comes back?
// Against a service with a funded lender of band C (e.g. after http-end-flows). node --import tsx ...
import { call, fresh, fundJob, keys, net, ok, report, signIn } from './doc.ts'

const M = 1_000_000n
const borrower = await fresh(0n)
const client = await fresh(1000n * M, keys.jobClient)
const { jobId, fundingTxHash: h } = await fundJob(borrower, client, 1000n * M)
const bt = await signIn(borrower)
await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash: h }, bt, 201)
const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(10n * M), purpose: 'x', supplier: 'x', supplierDomain: 'supplier.devnet', repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
const m1 = await call('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
console.log('match 1:', m1.status, m1.body.lease?.leaseId ?? m1.body.code)
const m2 = await call('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
console.log('match 2:', m2.status, m2.body.lease?.leaseId ?? null, m2.body.code ?? '', m2.body.detail ?? '', 'offer', m2.body.offer?.state)
report()
process.exit(0)
