// outsider28: does a rematch keep the honest lender's terms? An attacker registers a cheap lender (1 bps, funded with
// a little), its borrower's offer is leased to it, it lets the lease lapse; the offer is rematched to the honest lender
// (300 bps). The honest lender's authorization must carry its own fee (ceil(amount x 300 / 10000)), the reserve share
// of that fee, the offer's supplier, and the job. Cost to the attacker: a lender's least advance, gas, -500 bps of its
// own lender's reliability. Exits 1 if the honest lender's lease carries other terms.
// URL=http://127.0.0.1:8471 node --import tsx test/api/outsider28-scripts/rematch-terms.ts   (against a fresh `npm start`: earlier lenders change who is cheapest)
import { decodeFunctionData } from 'viem'
import { catalog, fresh, fund, fundJob, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'
import { lender } from './lender.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const abi = catalog.contracts.creditFacility.abi

const honest = await lender(100n * M, 100n * M, 300)
const cheap = await lender(10n * M, 10n * M, 1)
const borrower = await fresh(0n)
const bt = await signIn(borrower)
const client = await fresh(1000n * M, keys.jobClient)
const supplier = (await ok('GET', '/suppliers'))[0]
const { jobId, fundingTxHash } = await fundJob(borrower, client, 500n * M)
await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(500n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const amount = 5n * M
const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
const offerId = r.offer.offerId
const m = await ok('POST', '/credit/match', { offerId }, bt)
console.log('first lease to', m.lease?.lender, 'cheap is', cheap.account.address)
if (m.lease?.lender?.toLowerCase() !== cheap.account.address.toLowerCase()) throw new Error('not leased to the cheap lender')
const lease2 = await until('rematched to the honest lender', async () => {
  await ok('POST', '/credit/dispatch', {}, bt)
  const acts = await ok('GET', `/lenders/${honest.account.address}/actions`, undefined, honest.token)
  return acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
}, 180)
console.log(JSON.stringify(lease2.lease, null, 1).slice(0, 1500))
const call = decodeFunctionData({ abi, data: lease2.transaction.data })
const a = (call.args as any)[0]
const wantFee = (amount * 300n + 9999n) / 10000n
console.log('authorization', a)
if (a.fee !== wantFee) fail(`honest lender's authorization fee ${a.fee}, its ask gives ${wantFee}`)
if (a.reserveShare !== wantFee * 1000n / 10000n) fail(`reserve share ${a.reserveShare} for fee ${a.fee}`)
if (a.amount !== amount) fail(`amount ${a.amount}`)
if (a.payer.toLowerCase() !== honest.session.address.toLowerCase()) fail(`payer ${a.payer}`)
const supplierAddr = (supplier.addresses?.[net.slug] ?? [supplier.address])[0]
if (supplierAddr && a.supplier.toLowerCase() !== String(supplierAddr).toLowerCase()) fail(`supplier ${a.supplier} not ${supplierAddr}`)
await send(honest.session, lease2.transaction)
const offer = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${offerId}`); return o.state === 'funded' && o })
console.log('offer', JSON.stringify(offer).slice(0, 800))
const adv = await ok('GET', `/credit/advances/${offer.advanceId ?? offer.advance?.advanceId}`)
console.log('advance', JSON.stringify(adv).slice(0, 800))
if (BigInt(adv.feeAtomic) !== wantFee) fail(`advance fee ${adv.feeAtomic}, want ${wantFee}`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: the rematch carries the honest lender\'s own terms')
process.exit(bad.length ? 1 : 0)
