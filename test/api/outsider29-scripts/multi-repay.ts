// outsider29: one transaction, several Repaid. A stranger repays through Multicall3 (deployed on every devnet): in one
// transaction 1 unit of advance A twice and 1 unit of advance B (both the honest borrower's), and reports it once for
// each advance. Every Repaid must count once, and the ledger must equal the contract afterwards (getAdvance and
// /operator/reconcile). Exits 1 while an advance's owed differs from the contract's or reconciliation finds a difference.
// URL=http://127.0.0.1:8472 node --import tsx test/api/outsider29-scripts/multi-repay.ts
import { encodeFunctionData, parseAbi, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { call, catalog, fresh, net, ok, pub, send, signIn, until, usdcAddr, wallet } from '../outsider24-scripts/doc.ts'
import { lender } from '../outsider28-scripts/lender.ts'
import { registeredJob } from './setup.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const abi = catalog.contracts.creditFacility.abi
const facility = net.creditContract as Hex
const MC = '0xcA11bde05977b3631167028862bE2a173976CA11' as Hex
const mcAbi = parseAbi(['function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)'])
const tokenAbi = parseAbi(['function approve(address,uint256) returns (bool)', 'function transferFrom(address,address,uint256) returns (bool)'])

const L = await lender(100n * M, 100n * M, 0, ['A', 'B', 'C'])
const { borrower, bt, ct, jobId } = await registeredJob(100n * M, 60n * M)
const supplier = (await ok('GET', '/suppliers'))[0]
async function advance(amount: bigint) {
  const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(amount), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
  if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
  const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
  if (!m.lease) throw new Error(JSON.stringify(m))
  const acts = await ok('GET', `/lenders/${L.account.address}/actions`, undefined, L.token)
  await send(L.session, acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === r.offer.offerId).transaction)
  const o = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${r.offer.offerId}`); return o.state === 'funded' && o })
  return await ok('GET', `/credit/advances/${o.advanceId}`)
}
const A = await advance(10n * M)
const B = await advance(5n * M)
const stranger = await fresh(1n * M)
const st = await signIn(stranger)
const s = wallet(stranger)
await pub.waitForTransactionReceipt({ hash: await s.writeContract({ address: usdcAddr, abi: tokenAbi, functionName: 'approve', args: [MC, 3n] }) })
const calls = [
  { target: usdcAddr, allowFailure: false, callData: encodeFunctionData({ abi: tokenAbi, functionName: 'transferFrom', args: [stranger.address, MC, 3n] }) },
  { target: usdcAddr, allowFailure: false, callData: encodeFunctionData({ abi: tokenAbi, functionName: 'approve', args: [facility, 3n] }) },
  { target: facility, allowFailure: false, callData: encodeFunctionData({ abi, functionName: 'repay', args: [A.advanceKey, 1n] } as any) },
  { target: facility, allowFailure: false, callData: encodeFunctionData({ abi, functionName: 'repay', args: [A.advanceKey, 1n] } as any) },
  { target: facility, allowFailure: false, callData: encodeFunctionData({ abi, functionName: 'repay', args: [B.advanceKey, 1n] } as any) },
]
const hash = await s.writeContract({ address: MC, abi: mcAbi, functionName: 'aggregate3', args: [calls] })
const rec = await pub.waitForTransactionReceipt({ hash })
console.log('stranger: one aggregate3 with 3 repays (3 units + gas) ->', rec.status, rec.logs.length, 'logs')
for (const adv of [A, B]) {
  const r = await call('POST', `/credit/advances/${adv.advanceId}/repay`, { txHash: hash }, st)
  console.log(`report for ${adv.advanceId} ->`, r.status, r.body?.code ?? '', r.status < 300 ? `owed ${r.body?.advance?.lenderOwedAtomic ?? JSON.stringify(r.body).slice(0, 200)}` : '')
}
await new Promise((r) => setTimeout(r, 5000))
for (const adv of [A, B]) {
  const v = await ok('GET', `/credit/advances/${adv.advanceId}`)
  const c = await pub.readContract({ address: facility, abi, functionName: 'getAdvance', args: [adv.advanceKey] } as any) as any
  console.log(adv.advanceId, 'service', v.lenderOwedAtomic, v.reserveOwedAtomic, 'chain', c.lenderOwed, c.reserveOwed)
  if (BigInt(v.lenderOwedAtomic) !== c.lenderOwed || BigInt(v.reserveOwedAtomic) !== c.reserveOwed) fail(`${adv.advanceId}: the service says ${v.lenderOwedAtomic}+${v.reserveOwedAtomic} owed, the contract ${c.lenderOwed}+${c.reserveOwed}`)
}
const op = await signIn(privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'))
const rc = await ok('POST', '/operator/reconcile', { network: net.slug }, op)
const diffs = rc.networks.flatMap((n: any) => n.differences)
if (diffs.length) fail(`reconciliation: ${JSON.stringify(diffs).slice(0, 500)}`)
const done = await call('POST', `/credit/jobs/${jobId}/complete`, {}, ct)
console.log('client completes ->', done.status, done.body?.code ?? '')
if (done.status >= 400) fail(`the completion was refused: ${JSON.stringify(done.body).slice(0, 300)}`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds')
process.exit(bad.length ? 1 : 0)
