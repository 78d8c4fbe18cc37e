// outsider31: the job's older advances first, across a restart. outsider28's collateral capture (an honest band-A
// lender H's advance first, the party's lender LA's second, the party's client fails the job, LA liquidates first),
// with a restart of the service between the advances and the failure: the order in which the job's advances are
// looked at must still be the offers' order. Run in two phases around a restart on the same DATA_DIR:
//   URL=http://127.0.0.1:8474 node --import tsx test/api/outsider31-scripts/seniority-restart.ts setup /tmp/o31-state.json
//   (restart the service)
//   URL=http://127.0.0.1:8474 node --import tsx test/api/outsider31-scripts/seniority-restart.ts after /tmp/o31-state.json
// Exits 1 while H's advance recovers less than it is owed from the collateral. Also run with offer ids crossing a power
// of ten (`filler x N` first, so that H's offer is off_999 and LA's off_1000: a string order would put LA's first) and
// HFEE=298 LAFEE=0 (cheapest of their bands on a service earlier runs left lenders on). Ran 2026-11-28 11:12 and 11:14
// UTC against a fresh `npm start`, restarted between the phases: holds both times (H recovered all of it from the
// collateral, its own liquidation 409 advance_closed).
import { readFileSync, writeFileSync } from 'node:fs'
import { call, fresh, fundJob, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'
import { privateKeyToAccount } from 'viem/accounts'
import { fund } from '../outsider24-scripts/doc.ts'

// outsider28's lender, with a shorter longest duration (3 days): the filler offers (7 days) never lease to it
async function lender(liquidity: bigint, funded: bigint, feeBps: number, bands: string[]) {
  const account = await fresh(0n)
  const token = await signIn(account)
  const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(liquidity), asset: 'USDC', networks: [net.slug], minFeeBps: feeBps, maxDurationSeconds: 3 * 86400, acceptedRiskBands: bands }, token, 201)
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  await fund(session.address, funded, keys.lender)
  for (const tx of reg.setupTransactions) await send(session, tx)
  await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${account.address}/wallet`)).activity.availableAtomic) > 0n)
  return { account, token, session }
}

const M = 1_000_000n
const [phase, file] = [process.argv[2], process.argv[3]!]
if (phase === 'filler') {
  // approved offers on a job of their own, so that the next offer ids cross a power of ten (off_9 -> off_10)
  let n = Number(process.argv[4])
  while (n > 0) {
  const k = Math.min(n, 90)
  n -= k
  const borrower = await fresh(0n)
  const bt = await signIn(borrower)
  const client = await fresh(1000n * M, keys.jobClient)
  const supplier = (await ok('GET', '/suppliers'))[0]
  const { jobId, fundingTxHash } = await fundJob(borrower, client, 900n * M)
  await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(900n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
  for (let i = 0; i < k; i++) {
    const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(1n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: '1000' }, bt)
    if (i === k - 1) console.log(r.decision, r.offer?.offerId)
  }
  }
  process.exit(0)
}
if (phase === 'setup') {
  const H = await lender(100n * M, 100n * M, Number(process.env.HFEE ?? 300), ['A'])
  const LA = await lender(30n * M, 30n * M, Number(process.env.LAFEE ?? 1), ['C'])
  const borrower = await fresh(25n * M)
  const bt = await signIn(borrower)
  const client = await fresh(1000n * M, keys.jobClient)
  const ct = await signIn(client)
  const supplier = (await ok('GET', '/suppliers'))[0]
  const { jobId, fundingTxHash } = await fundJob(borrower, client, 500n * M)
  await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(500n * M), dueAt: new Date(Date.now() + 2 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
  const col = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${25n * M}`)
  let colTx = ''
  for (const tx of col.transactions) colTx = await send(borrower, tx)
  await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(25n * M), txHash: colTx }, bt, 201)
  async function borrowAndPay(amount: bigint, who: typeof H) {
    const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
    if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
    console.log('offer', r.offer.offerId, r.offer.riskBand)
    const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
    if (m.lease && m.lease.lender.toLowerCase() !== who.account.address.toLowerCase()) throw new Error(`leased to ${m.lease?.lender}`)
    const pay = await until('leased to ' + who.account.address, async () => {
      await call('POST', '/credit/dispatch', {}, bt)
      const acts = await ok('GET', `/lenders/${who.account.address}/actions`, undefined, who.token)
      return acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === r.offer.offerId)
    }, 240)
    await send(who.session, pay.transaction)
    const o = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${r.offer.offerId}`); return o.state === 'funded' && o })
    return { offerId: r.offer.offerId as string, band: r.offer.riskBand as string, advanceId: o.advanceId as string }
  }
  const a1 = await borrowAndPay(10n * M, H)
  const a2 = await borrowAndPay(20n * M, LA)
  console.log('H', a1, 'LA', a2)
  writeFileSync(file, JSON.stringify({ jobId, a1, a2, ct, la: LA.token, h: H.token, hFee: Number(process.env.HFEE ?? 300) }))
  console.log('now restart the service, then run phase after')
  process.exit(0)
}
const st = JSON.parse(readFileSync(file, 'utf8'))
await ok('POST', `/credit/jobs/${st.jobId}/fail`, { reason: 'not_delivered' }, st.ct)
const rA = await ok('POST', `/credit/advances/${st.a2.advanceId}/liquidate`, {}, st.la)
const rH = await call('POST', `/credit/advances/${st.a1.advanceId}/liquidate`, {}, st.h)
console.log('LA receipt', JSON.stringify(rA).slice(0, 500))
console.log('H liquidation', rH.status, JSON.stringify(rH.body).slice(0, 300))
const h = await ok('GET', `/credit/advances/${st.a1.advanceId}`)
console.log('H advance after', h.state, 'lenderOwed', h.lenderOwedAtomic, 'recovery', JSON.stringify(h.recovery))
const hCollateral = BigInt(h.recovery?.fromCollateralAtomic ?? 0)
const fee = BigInt(st.hFee ?? 300) * 10n * M / 10000n; const hOwed = 10n * M + fee - fee / 10n
const bad = hCollateral < hOwed
if (bad) console.log(`FINDING: after a restart H's older advance recovered ${hCollateral} of ${hOwed} from the collateral`)
else console.log('holds')
process.exit(bad ? 1 : 0)
