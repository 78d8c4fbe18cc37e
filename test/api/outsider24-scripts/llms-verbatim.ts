// outsider24: llms.txt's "Typical flow" with its example bodies verbatim (only the placeholders filled): a lender
// {"availableLiquidityAtomic":"1000000000",...,"acceptedRiskBands":["A","B"]}, a job of 5000 USDC (collateral is
// "optional"), a request of 1000 USDC with "supplier":"Supplier". What does the borrower get, and does it say why?
// Against a fresh `npm start`.  node --import tsx test/api/outsider24-scripts/llms-verbatim.ts
import { privateKeyToAccount } from 'viem/accounts'
import { call, fresh, fund, keys, net, ok, report, send, signIn, until } from './doc.ts'

const slug = net.slug
const lender = await fresh(0n)
const lt = await signIn(lender)
const reg = await ok('POST', '/lenders/register', JSON.parse(`{"availableLiquidityAtomic":"1000000000","asset":"USDC","networks":["${slug}"],"minFeeBps":250,"maxDurationSeconds":2592000,"acceptedRiskBands":["A","B"]}`), lt, 201)
const session = privateKeyToAccount(reg.sessionKey.privateKey)
await fund(session.address, 1000_000_000n, keys.lender)
for (const tx of reg.setupTransactions) await send(session, tx)
await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${lender.address}/wallet`)).activity.availableAtomic) > 0n)

const borrower = await fresh(0n)
const client = await fresh(5000_000_000n, keys.jobClient)
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=5000000000&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
const bt = await signIn(borrower)
await ok('POST', '/credit/jobs', JSON.parse(`{"jobId":"${jobId}","network":"${slug}","asset":"USDC","agent":"${borrower.address}","receivableAtomic":"5000000000","dueAt":"${new Date(Date.now() + 7 * 86400_000).toISOString()}","fundingTxHash":"${fundingTxHash}"}`), bt, 201)
const domain = (await ok('GET', '/suppliers'))[0].domain
const req = await call('POST', '/credit/request', JSON.parse(`{"agent":"${borrower.address}","network":"${slug}","asset":"USDC","productType":"job","amountAtomic":"1000000000","purpose":"inference","supplier":"Supplier","supplierDomain":"${domain}","repaymentSource":"${jobId}","maximumFeeAtomic":"100000000"}`), bt)
console.log('request:', req.status, JSON.stringify(req.body).slice(0, 700))
if (req.body.offer) {
  const m = await call('POST', '/credit/match', { offerId: req.body.offer.offerId }, bt)
  console.log('match:', m.status, JSON.stringify(m.body).slice(0, 700))
  // Then a lender of band C comes: is the waiting offer matched without the borrower asking again?
  const c = await fresh(0n)
  const creg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: '2000000000', asset: 'USDC', networks: [slug], minFeeBps: 300, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] }, await signIn(c), 201)
  const cs = privateKeyToAccount(creg.sessionKey.privateKey)
  await fund(cs.address, 2000_000_000n, keys.lender)
  for (const tx of creg.setupTransactions) await send(cs, tx)
  await until('band C lender in book', async () => BigInt((await ok('GET', `/lenders/${c.address}/wallet`)).activity.availableAtomic) > 0n)
  await new Promise((r) => setTimeout(r, 4000))
  console.log('offer 4 s after a band C lender came, nobody asking:', (await ok('GET', `/credit/offers/${req.body.offer.offerId}`)).state)
  const d = await ok('POST', '/credit/dispatch', {}, bt)
  console.log('dispatch:', JSON.stringify(d).slice(0, 300))
  console.log('offer after dispatch:', (await ok('GET', `/credit/offers/${req.body.offer.offerId}`)).state)
}
report()
process.exit(0)
