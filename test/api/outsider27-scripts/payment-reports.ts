// outsider27: reporting a supplier payment that is not yours, and calling paySupplier as someone else. A lease of one
// lender (L1) on a borrower's offer O1, paid by L1's session key; a second lender (L2, a stranger's: registered and
// funded, the least advance) and a plain stranger (signed in, no funds) then try: report L1's payment as L2's on O1,
// report it as L1's with their own token, report it against another offer O2 (leased to L1 too, unpaid), report a
// transaction that is not a paySupplier (the approve), and send L1's served paySupplier from their own wallet (the
// authorization is in L1's actions; the stream sends it too). L1's second lease is then paid twice on chain.
// Cost to the attacker: a sign-in (plus a lender registration for L2). The harm if any holds: an advance credited to
// the wrong lender (its repayments go to the advance's lender) or an offer marked funded that nobody paid.
// Exits 1 if any of these is accepted, 0 if every one is refused and the advances are L1's.
// URL=http://127.0.0.1:8402 node --import tsx test/api/outsider27-scripts/payment-reports.ts   (a fresh `npm start`)
import { privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { call, fresh, fund, keys, net, ok, pub, send, signIn, until, wallet } from '../outsider24-scripts/doc.ts'

const M = 1_000_000n
const slug = net.slug
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }

async function lender(liquidity: bigint, feeBps: number) {
  const account = await fresh(0n)
  const token = await signIn(account)
  const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(liquidity), asset: 'USDC', networks: [slug], minFeeBps: feeBps, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] }, token, 201)
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  await fund(session.address, liquidity, keys.lender)
  for (const tx of reg.setupTransactions) await send(session, tx)
  await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${account.address}/wallet`)).activity.availableAtomic) > 0n)
  return { account, token, session }
}

const l1 = await lender(100n * M, 1)
const borrower = await fresh(0n)
const bt = await signIn(borrower)
const client = await fresh(1000n * M, keys.jobClient)
const supplier = (await ok('GET', '/suppliers'))[0]
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${500n * M}&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
let approveHash = ''
for (const tx of ft.transactions) { approveHash = fundingTxHash; fundingTxHash = await send(client, tx) }
await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(500n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const leaseOf = new Map<string, string>()
async function offer(amount: bigint): Promise<string> {
  const r = await ok('POST', '/credit/request', { agent: borrower.address, network: slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(10n * M) }, bt)
  if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
  const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
  if (!m.lease) throw new Error(`no lease: ${JSON.stringify(m)}`)
  leaseOf.set(r.offer.offerId, m.lease.lender)
  return r.offer.offerId
}
const o1 = await offer(2n * M)
const acts = await ok('GET', `/lenders/${l1.account.address}/actions`, undefined, l1.token)
const pay1 = acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === o1)

// A stranger sends L1's served paySupplier from its own wallet (gas only); then L1 sends it with too little gas. Both
// transactions are mined reverted, to the credit contract with O1's arguments: reported, neither may fund O1.
const stranger = await fresh(0n)
const st = await signIn(stranger)
const reverted = async (from: typeof stranger, gas: bigint): Promise<Hex> => {
  const tx = pay1.transaction
  const hash = await wallet(from).sendTransaction({ to: tx.to, data: tx.data, value: 0n, gas })
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status === 'success') fail(`a paySupplier of O1 from ${from.address} with gas ${gas} was mined successfully`)
  return hash
}
const strangers = await reverted(stranger, BigInt(pay1.transaction.gas))
const starved = await reverted(l1.session, 60_000n)
for (const [what, id, who, token] of [['the stranger\'s reverted paySupplier reported by L1', strangers, l1.account.address, l1.token], ['L1\'s own reverted paySupplier (out of gas) reported by L1', starved, l1.account.address, l1.token]] as const) {
  const a = await call('POST', `/credit/offers/${o1}/supplier-payment`, { lender: who, supplierPaymentId: id }, token)
  console.log(what, '->', a.status, a.body?.code ?? a.body?.advanceId)
  if (a.status < 400) fail(`${what}: ${a.status} ${JSON.stringify(a.body).slice(0, 200)}`)
}
if ((await ok('GET', `/credit/offers/${o1}`)).state === 'funded') fail('O1 funded by a reverted transaction')

const payTx = await send(l1.session, pay1.transaction)
const l2 = await lender(2n * M, 1)
const report = (offerId: string, lenderAddr: string, id: string, token: string) =>
  call('POST', `/credit/offers/${offerId}/supplier-payment`, { lender: lenderAddr, supplierPaymentId: id }, token)
for (const [what, a] of [
  ['L2 reports L1\'s payment as its own', await report(o1, l2.account.address, payTx, l2.token)],
  ['a stranger reports L1\'s payment naming L1', await report(o1, l1.account.address, payTx, st)],
  ['a stranger reports L1\'s payment naming itself', await report(o1, stranger.address, payTx, st)],
] as const) {
  console.log(what, '->', a.status, a.body?.code ?? a.body?.advanceId)
  if (a.status < 400 && (a.body?.lender ?? '').toLowerCase() !== l1.account.address.toLowerCase()) fail(`${what}: ${a.status} ${JSON.stringify(a.body).slice(0, 200)}`)
  if (a.status < 400 && what !== 'L2 reports L1\'s payment as its own') { /* an answer of L1's advance to a reader is public anyway */ }
}
const mine = await ok('POST', `/credit/offers/${o1}/supplier-payment`, { lender: l1.account.address, supplierPaymentId: payTx }, l1.token)
if (mine.lender.toLowerCase() !== l1.account.address.toLowerCase()) fail(`advance of O1 is not L1's: ${mine.lender}`)

// O2 leased to L1, unpaid: reports of O1's payment, of the approve, of a random hash.
const o2 = await offer(3n * M)
console.log('O2 leased to', leaseOf.get(o2))
const l1Owns = leaseOf.get(o2)?.toLowerCase() === l1.account.address.toLowerCase()
for (const [what, id] of [['O1\'s payment reported on O2', payTx], ['the job funding\'s approve reported on O2', approveHash], ['the fundJob reported on O2', fundingTxHash], ['a random hash on O2', `0x${'ab'.repeat(32)}`]] as const) {
  const owner = l1Owns ? l1 : l2
  const a = await report(o2, owner.account.address, id, owner.token)
  console.log(what, '->', a.status, a.body?.code)
  if (a.status < 400) fail(`${what}: ${a.status} ${JSON.stringify(a.body).slice(0, 200)}`)
}
const o2State = (await ok('GET', `/credit/offers/${o2}`)).state
if (o2State === 'funded') fail('O2 funded without a payment')

// L1's (or whoever holds it) lease on O2 paid twice on chain.
const holder = l1Owns ? l1 : l2
const acts2 = await ok('GET', `/lenders/${holder.account.address}/actions`, undefined, holder.token)
const pay2 = acts2.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === o2)
if (pay2) {
  await send(holder.session, pay2.transaction)
  try { await send(holder.session, pay2.transaction); fail('paySupplier mined twice for one offer') } catch (e) { console.log('second paySupplier: refused', String(e).split('\n')[0]!.slice(0, 100)) }
}
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: every foreign report refused, advances the payer\'s')
process.exit(bad.length ? 1 : 0)
