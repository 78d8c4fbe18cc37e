// outsider28: a stranger calls the credit contract directly against a lender's money, with the catalog's ABI alone.
// A lender L leases and pays an advance on a borrower's job (collateral posted); a stranger S (gas only) then tries,
// each simulated at the latest block and, where the simulation passes, sent: pay L's authorization again from S, pay it
// again as if L (replayed key), pay it with its supplier changed to S, liquidate L's advance, settle or fail the job,
// reclaim the job, post collateral on it, claim what is held for L. Each must revert with the named error and move
// nothing. Cost to the stranger: the gas of what it sends (a simulation is free). Exits 1 if any call succeeds.
// URL=http://127.0.0.1:8471 node --import tsx test/api/outsider28-scripts/contract-direct.ts   (against a fresh `npm start`: earlier lenders change who is cheapest)
import { BaseError, ContractFunctionRevertedError, decodeFunctionData, type Hex } from 'viem'
import { catalog, fresh, fundJob, keys, net, ok, pub, send, signIn, until, usdcAddr } from '../outsider24-scripts/doc.ts'
import { lender } from './lender.ts'

const M = 1_000_000n
const bad: string[] = []
const abi = catalog.contracts.creditFacility.abi
const contract = net.creditContract as Hex
const { account, token, session } = await lender(50n * M, 50n * M, 0)
const borrower = await fresh(10n * M)
const bt = await signIn(borrower)
const client = await fresh(500n * M, keys.jobClient)
const supplier = (await ok('GET', '/suppliers'))[0]
const { jobId, fundingTxHash } = await fundJob(borrower, client, 200n * M)
await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(200n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, bt, 201)
const r = await ok('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: String(5n * M), purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: String(1n * M) }, bt)
const m = await ok('POST', '/credit/match', { offerId: r.offer.offerId }, bt)
if (m.lease?.lender !== account.address) throw new Error(`leased to another lender: ${JSON.stringify(m.lease ?? m.noLease)}`)
const acts = await ok('GET', `/lenders/${account.address}/actions`, undefined, token)
const pay = acts.find((a: any) => a.kind === 'pay_supplier' && a.lease.offerId === r.offer.offerId)
const [auth, sig] = decodeFunctionData({ abi, data: pay.transaction.data }).args as [any, Hex]
await send(session, pay.transaction)
const offer = await until('funded', async () => { const o = await ok('GET', `/credit/offers/${r.offer.offerId}`); return o.state === 'funded' && o })
const before = await ok('GET', `/credit/advances/${offer.advanceId}`)

const stranger = await fresh(0n)
const jobKey = auth.jobKey as Hex
const attempts: [string, Hex, string, unknown[]][] = [
  ['the stranger sends L\'s authorization', stranger.address, 'paySupplier', [auth, sig]],
  ['L\'s session sends its authorization again', session.address, 'paySupplier', [auth, sig]],
  ['the stranger pays it to itself', stranger.address, 'paySupplier', [{ ...auth, payer: stranger.address, supplier: stranger.address, offerKey: `0x${'11'.repeat(32)}` }, sig]],
  ['L\'s session pays it to the stranger (changed supplier, new key)', session.address, 'paySupplier', [{ ...auth, supplier: stranger.address, offerKey: `0x${'12'.repeat(32)}` }, sig]],
  ['the stranger liquidates L\'s advance', stranger.address, 'liquidate', [auth.offerKey, 0n]],
  ['the stranger settles the job', stranger.address, 'settleJob', [jobKey, [auth.offerKey]]],
  ['the stranger fails the job', stranger.address, 'failJob', [jobKey]],
  ['the stranger reclaims the job', stranger.address, 'reclaimJob', [jobKey]],
  ['the client reclaims the job early', client.address, 'reclaimJob', [jobKey]],
  ['the stranger posts collateral on it', stranger.address, 'postCollateral', [jobKey, usdcAddr, 1n]],
  ['the stranger funds the job\'s key again', stranger.address, 'fundJob', [jobKey, usdcAddr, 1n, stranger.address]],
  ['the stranger claims what is held for L\'s session', stranger.address, 'claimHeld', [usdcAddr, session.address]],
  ['the stranger repays 0', stranger.address, 'repay', [auth.offerKey, 0n]],
]
for (const [what, from, functionName, args] of attempts) {
  try {
    await pub.simulateContract({ account: from, address: contract, abi, functionName, args } as any)
    bad.push(what); console.log('FINDING:', what, 'would succeed')
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null : null
    console.log(`${what}: reverts ${revert?.data?.errorName ?? String(e).split('\n')[0]}`)
  }
}
const after = await ok('GET', `/credit/advances/${offer.advanceId}`)
if (JSON.stringify(before) !== JSON.stringify(after)) { bad.push('the advance changed'); console.log('FINDING: the advance changed', JSON.stringify(after).slice(0, 300)) }
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: every direct call reverts with its named error')
process.exit(bad.length ? 1 : 0)
