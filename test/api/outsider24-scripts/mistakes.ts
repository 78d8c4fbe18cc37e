// outsider24: the mistakes a first agent makes, each answered problem+json: does `detail` say what to do? Prints
// status, code and detail for each (and validates each against the document, doc.ts). Against a running service.
// node --import tsx test/api/outsider24-scripts/mistakes.ts
import { privateKeyToAccount } from 'viem/accounts'
import { call, fresh, fund, keys, net, ok, report, send, signIn, until } from './doc.ts'

const M = 1_000_000n
const slug = net.slug
const show = (what: string, a: { status: number, body: any }) => console.log(`${what}: ${a.status} ${a.body?.code ?? ''} | ${a.body?.detail ?? JSON.stringify(a.body).slice(0, 200)}`)

const lender = await fresh(0n)
const lt = await signIn(lender)
const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] }, lt, 201)
const session = privateKeyToAccount(reg.sessionKey.privateKey)
show('register again', await call('POST', '/lenders/register', { availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }, lt))
show('register asset by address', await call('POST', '/lenders/register', { availableLiquidityAtomic: '1', asset: net.assets[0].address, networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }, await signIn(await fresh(0n))))
show('register bands lower case', await call('POST', '/lenders/register', { availableLiquidityAtomic: '1', asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['a'] }, await signIn(await fresh(0n))))
show('register amount as number', await call('POST', '/lenders/register', { availableLiquidityAtomic: 1000000, asset: 'USDC', networks: [slug], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }, await signIn(await fresh(0n))))
show('register network by chainId', await call('POST', '/lenders/register', { availableLiquidityAtomic: '1', asset: 'USDC', networks: ['eip155:31337'], minFeeBps: 250, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }, await signIn(await fresh(0n))))
show('actions without token', await call('GET', `/lenders/${lender.address}/actions`))
show('actions by session key address', await call('GET', `/lenders/${session.address}/actions`, undefined, lt))
show('token as raw header (no Bearer)', await call('GET', `/lenders/${lender.address}/actions`, undefined, undefined, { authorization: lt }))

const borrower = await fresh(100n * M)
const bt = await signIn(borrower)
const client = await fresh(1000n * M, keys.jobClient)
const jobId = `job_${crypto.randomUUID()}`
const dueAt = new Date(Date.now() + 7 * 86400_000).toISOString()
show('job before funding', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt, fundingTxHash: '0x' + '11'.repeat(32) }, bt))
show('funding-transactions without client', await call('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${1000n * M}&agent=${borrower.address}`))
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${1000n * M}&agent=${borrower.address}&client=${client.address}`)
const approveHash = await send(client, ft.transactions[0])
const fundHash = await send(client, ft.transactions[1])
show('job with the approve hash', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt, fundingTxHash: approveHash }, bt))
show('job receivable differs', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(999n * M), dueAt, fundingTxHash: fundHash }, bt))
show('job dueAt without zone', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt: dueAt.replace('Z', ''), fundingTxHash: fundHash }, bt))
show('job by a stranger', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt, fundingTxHash: fundHash }, lt))
await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt, fundingTxHash: fundHash }, bt, 201)
show('job again', await call('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt, fundingTxHash: fundHash }, bt))
const base = { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(10n * M), purpose: 'inference', supplier: 'x', supplierDomain: 'supplier.devnet', repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }
show('request unknown supplier', await call('POST', '/credit/request', { ...base, supplierDomain: 'nope.example' }, bt))
show('request too much', await call('POST', '/credit/request', { ...base, amountAtomic: String(5000n * M) }, bt))
show('request below least advance', await call('POST', '/credit/request', { ...base, amountAtomic: '1000' }, bt))
show('request other job', await call('POST', '/credit/request', { ...base, repaymentSource: 'job_nope' }, bt))
show('request by lender', await call('POST', '/credit/request', base, lt))
const r = await ok('POST', '/credit/request', base, bt)
show('match by stranger', await call('POST', '/credit/match', { offerId: r.offer.offerId }, lt))
show('match unknown', await call('POST', '/credit/match', { offerId: 'off_999' }, bt))
show('match no body', await call('POST', '/credit/match', {}, bt))
show('match no lender', await call('POST', '/credit/match', { offerId: r.offer.offerId }, bt))
show('supplier-payment without lease', await call('POST', `/credit/offers/${r.offer.offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: '0x' + '22'.repeat(32) }, lt))
show('repay-transactions unknown', await call('GET', '/credit/advances/adv_999/repay-transactions'))
show('withdraw by borrower', await call('POST', `/lenders/${lender.address}/withdraw`, { amountAtomic: '1' }, bt))
show('withdraw too much', await call('POST', `/lenders/${lender.address}/withdraw`, { amountAtomic: String(501n * M) }, lt))
show('complete by borrower', await call('POST', `/credit/jobs/${jobId}/complete`, {}, bt))
show('fail bad reason', await call('POST', `/credit/jobs/${jobId}/fail`, { reason: 'bad' }, await signIn(client)))
show('lenders limit 0', await call('GET', '/lenders?limit=0'))
show('unknown query', await call('GET', '/credit/state?x=1'))
show('nonce POST', await call('POST', '/auth/nonce', {}))
void fund; void until; void send
report()
process.exit(0)
