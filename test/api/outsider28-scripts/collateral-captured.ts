// outsider28: the collateral that made an honest lender's offer band A is taken by the party's own lender. A borrower
// and a client of one party (two fresh wallets) fund a job (receivable 500) and post 25 of collateral: a first offer of
// 10 is band A (coverage 25 / 10) and goes to the honest lender H (bands A only, 300 bps). A second offer of 20 on the
// same job is band C (what the first holds is not there for it) and goes to the party's own lender LA (band C only,
// 1 bps; wallets unrelated to the borrower and the client, so eligible). The client fails the job (its escrow comes
// back) and LA liquidates its advance first: the contract takes the job's collateral for whichever advance is
// liquidated first, so LA gets the 25 back and H's band-A advance recovers no collateral (the reserve, then a
// shortfall). Cost to the party: LA's 20 paid to a directory supplier (a purchase), gas, a suspended fresh borrower;
// it gets its collateral back through LA and H's 10 of purchases free. Exits 1 while H's band-A advance recovers less
// than it is owed from the collateral that made it band A.
// URL=http://127.0.0.1:8471 node --import tsx test/api/outsider28-scripts/collateral-captured.ts   (against a fresh `npm start`: earlier lenders change who is cheapest)
import { call, fresh, fund, fundJob, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'
import { lender } from './lender.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }

const H = await lender(100n * M, 100n * M, 300, ['A'])
const LA = await lender(30n * M, 30n * M, 1, ['C'])
const borrower = await fresh(25n * M)
const bt = await signIn(borrower)
const client = await fresh(1000n * M, keys.jobClient)
const ct = await signIn(client)
const supplier = (await ok('GET', '/suppliers'))[0]
const { jobId, fundingTxHash } = await fundJob(borrower, client, 500n * M)
await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(500n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const col = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${25n * M}`)
let colTx = ''
for (const tx of col.transactions) colTx = await send(borrower, tx)
await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(25n * M), txHash: colTx }, bt, 201)

async function borrowAndPay(amount: bigint, who: typeof H) {
  const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
  if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
  console.log('offer', r.offer.offerId, 'band', r.offer.riskBand, 'amount', amount)
  const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
  if (m.lease?.lender?.toLowerCase() !== who.account.address.toLowerCase()) throw new Error(`leased to ${m.lease?.lender}: ${JSON.stringify(m.noLease ?? m.lease)}`)
  const acts = await ok('GET', `/lenders/${who.account.address}/actions`, undefined, who.token)
  const pay = acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === r.offer.offerId)
  await send(who.session, pay.transaction)
  const o = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${r.offer.offerId}`); return o.state === 'funded' && o })
  return { band: r.offer.riskBand as string, advanceId: o.advanceId as string }
}
const a1 = await borrowAndPay(10n * M, H)
if (a1.band !== 'A') throw new Error(`first offer band ${a1.band}`)
const a2 = await borrowAndPay(20n * M, LA)
console.log('H advance', a1.advanceId, 'LA advance', a2.advanceId, 'band of LA\'s', a2.band)
await ok('POST', `/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' }, ct)
const rA = await ok('POST', `/credit/advances/${a2.advanceId}/liquidate`, {}, LA.token)
// H liquidates its own; once the service liquidates older advances first, it finds it done (409 advance_closed).
const rH = await call('POST', `/credit/advances/${a1.advanceId}/liquidate`, {}, H.token)
const step = (r: any, k: string) => BigInt(r.steps?.find((s: any) => s.step === k)?.amountAtomic ?? 0)
console.log('LA receipt', JSON.stringify(rA).slice(0, 700))
console.log('H liquidation', rH.status, JSON.stringify(rH.body).slice(0, 700))
const h = await ok('GET', `/credit/advances/${a1.advanceId}`)
console.log('H advance after', h.state, 'lenderOwed', h.lenderOwedAtomic, 'recovery', JSON.stringify(h.recovery))
const hCollateral = BigInt(h.recovery?.fromCollateralAtomic ?? 0)
const hOwed = 10n * M + 300000n - 30000n
if (hCollateral < hOwed) fail(`H's band-A advance (collateral 25 for 10 when offered) recovered ${hCollateral} of ${hOwed} from the collateral; LA's band-C advance took ${step(rA, 'collateral')}; H still owed ${h.lenderOwedAtomic}`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: the band-A lender recovered from the collateral')
process.exit(bad.length ? 1 : 0)
