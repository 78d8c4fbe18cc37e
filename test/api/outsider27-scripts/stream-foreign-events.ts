// outsider27: whose events does a wallet's stream carry? Two lenders (LA asks 1 bps, LB 2 bps), a borrower, a job's
// client, and a stranger, each with its own stream (WebSocket /events). The borrower's offer is leased to LA, which
// does not pay: the lease expires and the offer is rematched to LB, which pays; the client completes the job. Then:
// does LA's stream carry anything of LB's lease or advance (its paySupplier authorization, its advance), does the
// stranger's carry anything, does the borrower's carry a lender's signed authorization (the "action"), and does the
// client's (it funded the job) carry the borrower's offers? Cost to the attacker: a lender registration (LA) or a
// sign-in; the harm would be another wallet's private events (a rival lender's leases and what it lends).
// Exits 1 if any wallet's stream carries an event of a lease, offer or advance that is not its own.
// URL=http://127.0.0.1:8402 node --import tsx test/api/outsider27-scripts/stream-foreign-events.ts   (a fresh `npm start`)
import WebSocket from 'ws'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { base, fresh, fund, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'

const M = 1_000_000n
const slug = net.slug
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }

function stream(token: string): any[] {
  const got: any[] = []
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/events`, { headers: { authorization: `Bearer ${token}` } })
  ws.on('message', (d) => got.push(JSON.parse(String(d))))
  ws.on('close', (code, why) => got.push({ type: 'closed', code, why: String(why) }))
  return got
}
async function lender(feeBps: number, liquidity: bigint) {
  const account = await fresh(0n)
  const token = await signIn(account)
  const events = stream(token)
  const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(liquidity), asset: 'USDC', networks: [slug], minFeeBps: feeBps, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] }, token, 201)
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  await fund(session.address, liquidity, keys.lender)
  for (const tx of reg.setupTransactions) await send(session, tx)
  await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${account.address}/wallet`)).activity.availableAtomic) > 0n)
  return { account, token, session, events }
}
const la = await lender(1, 5n * M)
const lb = await lender(2, 5n * M)
const borrower = await fresh(0n)
const bt = await signIn(borrower)
const bEvents = stream(bt)
const client = await fresh(100n * M, keys.jobClient)
const ct = await signIn(client)
const cEvents = stream(ct)
const stranger = await fresh(0n)
const sEvents = stream(await signIn(stranger))

const supplier = (await ok('GET', '/suppliers'))[0]
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${50n * M}&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(50n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const r = await ok('POST', '/credit/request', { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(2n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
const offerId = r.offer.offerId
const m = await ok('POST', '/credit/match', { offerId }, bt)
console.log('first lease to', m.lease?.lender, '(LA', la.account.address + ')')
// LA does not pay; wait for the rematch to LB, which pays.
const pay = await until('LB leased', async () => (await ok('GET', `/lenders/${lb.account.address}/actions`, undefined, lb.token)).find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === offerId), 120)
const payTx = await send(lb.session, pay.transaction)
const advance = await ok('POST', `/credit/offers/${offerId}/supplier-payment`, { lender: lb.account.address, supplierPaymentId: payTx }, lb.token)
await ok('POST', `/credit/jobs/${jobId}/complete`, {}, ct)
await new Promise((res) => setTimeout(res, 3000))

const lbLeases = new Set(lb.events.filter((e) => e.kind === 'lease').map((e) => e.lease?.leaseId ?? e.leaseId))
const text = (xs: any[]) => xs.map((e) => JSON.stringify(e))
console.log('LA got', la.events.map((e) => `${e.type}:${e.kind ?? ''}:${e.state ?? e.lease?.state ?? e.advance?.state ?? ''}`).join(' '))
console.log('LB got', lb.events.map((e) => `${e.type}:${e.kind ?? ''}`).join(' '))
console.log('borrower got', bEvents.map((e) => `${e.type}:${e.kind ?? ''}`).join(' '))
console.log('client got', cEvents.map((e) => `${e.type}:${e.kind ?? ''}`).join(' '))
console.log('stranger got', sEvents.map((e) => `${e.type}:${e.kind ?? ''}`).join(' '))
for (const t of text(la.events)) {
  if (t.includes(advance.advanceId) || [...lbLeases].some((id) => id && t.includes(id)) || t.toLowerCase().includes(lb.session.address.toLowerCase())) fail(`LA's stream carries LB's lease or advance: ${t.slice(0, 300)}`)
}
for (const t of text(sEvents)) if (t.includes('"event"')) fail(`the stranger's stream carries an event: ${t.slice(0, 300)}`)
for (const t of text(bEvents)) if (/"signature"\s*:\s*"0x/.test(t)) fail(`the borrower's stream carries a lender's signed authorization: ${t.slice(0, 300)}`)
for (const t of text(cEvents)) if (t.includes(offerId)) fail(`the job's client's stream carries the borrower's offer: ${t.slice(0, 300)}`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: each stream carries its own wallet\'s events only')
process.exit(bad.length ? 1 : 0)
