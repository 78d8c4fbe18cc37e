// outsider29: a borrower's credit and a job client's escrow among strangers, from the published documents and the
// contract's ABI only. The honest flow of llms.txt (a client funds a job, its borrower registers it and posts collateral,
// requests credit, a lender pays the supplier, the client completes), with a stranger (a fresh signed-in wallet) trying
// the borrower's and the client's routes and the contract at each step; then a job whose client stays silent.
// Each attempt prints its cost to the stranger and its outcome; a FINDING line for each that succeeds (the silent client's
// hold on the collateral exits 0 once the borrower may reclaim: CreditFacilityV2.reclaimJob). Exits 1 while any
// finding holds.
// URL=http://127.0.0.1:8472 node --import tsx test/api/outsider29-scripts/borrower-client.ts   (against a fresh `npm start`)
import { keccak256, stringToBytes, parseAbi, type Hex } from 'viem'
import { call, catalog, fresh, fundJob, keys, net, ok, pub, send, signIn, until, usdcAddr, wallet, erc20 } from '../outsider24-scripts/doc.ts'
import { lender } from '../outsider28-scripts/lender.ts'
import { postCollateral } from './setup.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const facility = catalog.contracts.creditFacility.abi ?? catalog.contracts.creditFacility
const abi = Array.isArray(facility) ? facility : facility.abi
const contract = net.creditContract as Hex
const balance = async (a: Hex) => await pub.readContract({ address: usdcAddr, abi: erc20, functionName: 'balanceOf', args: [a] }) as bigint
const refused = async (what: string, p: Promise<{ status: number, body: any }>, cost = 'gas 0, tokens 0') => {
  const r = await p
  console.log(`stranger: ${what} (${cost}) -> ${r.status} ${r.body?.code ?? ''}`)
  if (r.status < 400) fail(`${what} was accepted: ${JSON.stringify(r.body).slice(0, 300)}`)
}
async function reverts(what: string, from: any, functionName: string, args: unknown[]): Promise<string> {
  try {
    await pub.simulateContract({ account: from, address: contract, abi, functionName, args } as any)
    return ''
  } catch (e: any) {
    const name = e?.cause?.data?.errorName ?? e?.shortMessage ?? String(e)
    console.log(`${what}: ${functionName} reverts ${name}`)
    return name
  }
}

const L = await lender(200n * M, 200n * M, 100, ['A', 'B', 'C'])
const borrower = await fresh(200n * M)
const bt = await signIn(borrower)
const client = await fresh(500n * M, keys.jobClient)
const ct = await signIn(client)
const stranger = await fresh(5n * M)
const st = await signIn(stranger)
const supplier = (await ok('GET', '/suppliers'))[0]
const dueAt = new Date(Date.now() + 2 * 86400_000).toISOString()

// 1. The client funds the job, the borrower registers it and posts collateral.
const clientBefore = await balance(client.address)
const { jobId, fundingTxHash } = await fundJob(borrower, client, 100n * M)
const jobKey = keccak256(stringToBytes(jobId))
await refused('register the borrower\'s job as a stranger', call('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt, fundingTxHash }, st))
await refused('register the borrower\'s job naming itself the borrower', call('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: stranger.address, receivableAtomic: String(100n * M), dueAt, fundingTxHash }, st))
await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt, fundingTxHash }, bt, 201)
const colTx = await postCollateral(borrower, bt, jobId, 50n * M, false)
await refused('report the borrower\'s collateral posting', call('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(50n * M), txHash: colTx }, st))
await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(50n * M), txHash: colTx }, bt, 201)
// On chain: post collateral to the borrower's job, fund its key again.
await reverts('stranger', stranger, 'postCollateral', [jobKey, usdcAddr, 1n])
await reverts('stranger', stranger, 'fundJob', [jobKey, usdcAddr, 1n, stranger.address])

// 2. The borrower requests credit; the stranger tries its offer.
const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(10n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
if (r.decision !== 'approved') throw new Error(JSON.stringify(r))
const offerId = r.offer.offerId
console.log('offer', offerId, 'band', r.offer.riskBand)
await refused('request credit on the borrower\'s job', call('POST', '/credit/request', { agent: stranger.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(1n * M), purpose: 'x', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, st).then((a) => (a.body?.decision === 'declined' ? { status: 422, body: { code: a.body.reasons?.join(',') } } : a)))
await refused('match the borrower\'s offer', call('POST', '/credit/match', { offerId }, st))
await refused('report a supplier payment on the offer', call('POST', `/credit/offers/${offerId}/supplier-payment`, { lender: stranger.address, supplierPaymentId: colTx }, st))
const m = await ok('POST', '/credit/match', { offerId }, bt)
if (m.lease?.lender?.toLowerCase() !== L.account.address.toLowerCase()) throw new Error(JSON.stringify(m))
const acts = await ok('GET', `/lenders/${L.account.address}/actions`, undefined, L.token)
const pay = acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
await send(L.session, pay.transaction)
const o = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${offerId}`); return o.state === 'funded' && o })
const advanceId = o.advanceId as string
const adv = await ok('GET', `/credit/advances/${advanceId}`)
const advanceKey = adv.advanceKey as Hex
console.log('advance', advanceId, 'owed', adv.lenderOwedAtomic, adv.reserveOwedAtomic)

// 3. The stranger against the advance and the job.
await refused('liquidate the borrower\'s advance', call('POST', `/credit/advances/${advanceId}/liquidate`, {}, st))
const early = await call('POST', `/credit/advances/${advanceId}/liquidate`, {}, L.token)
console.log(`its lender: liquidate before due -> ${early.status} ${early.body?.code ?? ''}`)
if (early.status < 400) fail('the lender liquidated an advance neither due nor defaulted')
await refused('fail the borrower\'s job', call('POST', `/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' }, st))
await refused('complete the borrower\'s job', call('POST', `/credit/jobs/${jobId}/complete`, {}, st))
await reverts('stranger', stranger, 'reclaimJob', [jobKey])
await reverts('stranger', stranger, 'liquidate', [advanceKey, 0n])
await reverts('stranger', stranger, 'settleJob', [jobKey, [advanceKey]])
await reverts('stranger', stranger, 'failJob', [jobKey])
// A repayment of one atomic unit by the stranger: its own money, it lowers what the borrower owes by exactly that.
const approve = await wallet(stranger).writeContract({ address: usdcAddr, abi: parseAbi(['function approve(address,uint256) returns (bool)']), functionName: 'approve', args: [contract, 1n] })
await pub.waitForTransactionReceipt({ hash: approve })
const rep = await wallet(stranger).writeContract({ address: contract, abi, functionName: 'repay', args: [advanceKey, 1n] } as any)
await pub.waitForTransactionReceipt({ hash: rep })
const repR = await call('POST', `/credit/advances/${advanceId}/repay`, { txHash: rep }, st)
console.log(`stranger: repay 1 atomic unit (1 unit + gas) and report it -> ${repR.status} ${repR.body?.code ?? ''}`)
const afterRepay = await until('repayment counted', async () => { const a = await ok('GET', `/credit/advances/${advanceId}`); return BigInt(a.lenderOwedAtomic) === BigInt(adv.lenderOwedAtomic) - 1n && a })
console.log('advance after the stranger\'s unit', afterRepay.state, afterRepay.lenderOwedAtomic)
const pass = await ok('GET', `/passport/${borrower.address}`)
if ((pass.items ?? pass.events ?? []).length) fail(`the stranger's unit wrote the borrower's passport: ${JSON.stringify(pass).slice(0, 300)}`)

// 4. The client completes: it pays its escrow once, the borrower gets the rest of escrow and collateral.
const borrowerBefore = await balance(borrower.address)
const done = await ok('POST', `/credit/jobs/${jobId}/complete`, {}, ct)
console.log('completed', JSON.stringify(done).slice(0, 200))
const owed = BigInt(afterRepay.lenderOwedAtomic) + BigInt(afterRepay.reserveOwedAtomic)
const borrowerGot = (await balance(borrower.address)) - borrowerBefore
if (borrowerGot !== 150n * M - owed) fail(`the borrower got ${borrowerGot}, not escrow + collateral - owed ${150n * M - owed}`)
if (clientBefore - (await balance(client.address)) !== 100n * M) fail('the client paid other than its escrow once')
await refused('fail the completed job (the client)', call('POST', `/credit/jobs/${jobId}/fail`, { reason: 'late' }, ct))
await reverts('client', client, 'reclaimJob', [jobKey])

// 5. A second job whose client stays silent: the borrower posted collateral, drew nothing, and waits for its client.
const client2 = await fresh(2n * M, keys.jobClient)
const job2 = await fundJob(borrower, client2, 1n * M)
const job2Key = keccak256(stringToBytes(job2.jobId))
await ok('POST', '/credit/jobs', { jobId: job2.jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1n * M), dueAt, fundingTxHash: job2.fundingTxHash }, bt, 201)
await postCollateral(borrower, bt, job2.jobId, 40n * M, false)
const own = [
  await call('POST', `/credit/jobs/${job2.jobId}/complete`, {}, bt),
  await call('POST', `/credit/jobs/${job2.jobId}/fail`, { reason: 'cancelled' }, bt),
]
console.log('borrower: complete / fail its own job ->', own.map((a) => `${a.status} ${a.body?.code ?? ''}`).join(' / '))
const why = await reverts('borrower', borrower, 'reclaimJob', [job2Key])
const j2 = await pub.readContract({ address: contract, abi, functionName: 'getJob', args: [job2Key] } as any) as any
if (own.every((a) => a.status >= 400) && why.includes('NotClient')) {
  fail(`a job's silent client keeps its borrower's collateral (${j2.collateral} atomic, nothing advanced) in the contract for good: only the client (reclaimJob, complete, fail) or an operator releases it; the client's cost: an escrow of ${j2.escrow} atomic, which it may take back whenever it likes (and the collateral with it)`)
}
console.log(bad.length ? `${bad.length} finding(s)` : 'holds')
process.exit(bad.length ? 1 : 0)
