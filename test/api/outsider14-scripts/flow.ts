// outsider14: the documents' flow (lender, borrower with collateral, failure, liquidation, withdraw) with adversary
// probes at each step: a stranger calling the credit contract directly, the lender withdrawing over a live lease, the
// borrower acting between match and the supplier's payment. Run against `PORT=18414 npm start`.
import { createPublicClient, http, keccak256, stringToBytes, type Hex } from 'viem'
import { Agent, chainOf, devnetOf, erc20, freshAgent, registeredJob, registeredLender, sendUnsigned, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18414'
const { catalog, net, key } = await devnetOf(url)
const abi = catalog['contracts']['creditFacility']['abi']
const pub = createPublicClient({ chain: chainOf(net), transport: http(net.rpcUrl) })
const usdcAddr = net.assets[0]!.address
const bal = (a: `0x${string}`) => pub.readContract({ address: usdcAddr, abi: erc20, functionName: 'balanceOf', args: [a] }) as Promise<bigint>
const lender = await freshAgent(url, net, key, 'lender', 2_000_000_000n)
const borrower = await freshAgent(url, net, key, 'borrower', 500_000_000n)
const client = await freshAgent(url, net, key, 'jobClient', 1_000_000_000n)
const stranger = await freshAgent(url, net, key, 'borrower', 100_000_000n)
const session = await registeredLender(lender, net, 1_000_000_000n, 200)
const jobId = await registeredJob(client, borrower, net, 1_000_000_000n)
const jobKey = keccak256(stringToBytes(jobId))
let colTx = ''
for (const tx of (await borrower.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=400000000`)).body.transactions) colTx = (await sendUnsigned(net, borrower.account, tx)).hash
console.log('collateral', (await borrower.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: '400000000', txHash: colTx })).status)
await new Promise((r) => setTimeout(r, 1500))
const supplier = ((await (await fetch(`${url}/suppliers`)).json()) as Json[])[0]!
const req = (amount: string) => ({ agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: amount, purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '50000000' })
const decision = (await borrower.post('/credit/request', req('300000000'))).body
console.log('decision', decision.decision, JSON.stringify(decision.reasons ?? decision.offer?.riskBand))
const offerId = decision.offer.offerId
const match = (await borrower.post('/credit/match', { offerId })).body
console.log('lease', match.lease?.lender === lender.address ? 'ours' : JSON.stringify(match.lease))

const sim = async (who: Agent | { account: any }, fn: string, args: unknown[]) => {
  try {
    await pub.simulateContract({ account: (who as any).account, address: net.creditContract, abi, functionName: fn, args })
    return 'WOULD SUCCEED'
  } catch (e) {
    const m = String((e as Error).message)
    return (/reverted with the following reason:\s*\n?(.*)/.exec(m)?.[1] ?? /Error: (\w+\(.*?\))/.exec(m)?.[1] ?? m.split('\n')[0] ?? m).slice(0, 120)
  }
}
// Between match and payment: the borrower asks again on the same job (capacity must count the live offer).
const again = (await borrower.post('/credit/request', req('600000000'))).body
console.log('second request while leased', again.decision, JSON.stringify(again.reasons ?? again.offer?.amountAtomic))
if (again.offer) console.log('second match', JSON.stringify((await borrower.post('/credit/match', { offerId: again.offer.offerId })).body.lease?.amountAtomic ?? null))

const actions = (await lender.get(`/lenders/${lender.address}/actions`)).body as Json[]
const pay = actions.find((a) => a['kind'] === 'pay_supplier' && a['lease']['offerId'] === offerId)!
console.log('actions', JSON.stringify(actions.map((a) => [a['kind'], a['amountAtomic'] ?? a['lease']?.['amountAtomic']])))
// A stranger replays the lender's paySupplier data from its own wallet.
try {
  await pub.call({ account: stranger.account, to: pay['transaction']['to'], data: pay['transaction']['data'] })
  console.log('stranger paySupplier: WOULD SUCCEED')
} catch (e) { console.log('stranger paySupplier:', String((e as Error).message).split('\n').slice(0, 2).join(' ')) }

// The lender withdraws everything while its lease is live.
const wd = await lender.post(`/lenders/${lender.address}/withdraw`, { amountAtomic: '1000000000' })
console.log('withdraw', wd.status, JSON.stringify(wd.body.lender ?? wd.body).slice(0, 400))
console.log('withdraw actions', JSON.stringify((wd.body.actions ?? []).map((a: Json) => [a['kind'], a['amountAtomic']])))
for (const a of wd.body.actions ?? []) if (a['kind'] === 'withdraw') console.log('sent withdraw', JSON.stringify(await sendUnsigned(net, session, a['transaction'])))
console.log('session balance after withdraw', await bal(session.address))
const sent = await sendUnsigned(net, session, pay['transaction'])
console.log('paySupplier', JSON.stringify(sent))
const adv = await lender.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: sent.hash })
console.log('advance', adv.status, JSON.stringify(adv.body).slice(0, 300))
const advanceKey = adv.body.advanceKey as Hex
// The stranger against the contract.
for (const [fn, args] of [
  ['liquidate', [advanceKey, 0n]], ['liquidate', [advanceKey, 10n ** 30n]], ['settleJob', [jobKey, [advanceKey]]], ['failJob', [jobKey]], ['reclaimJob', [jobKey]],
  ['postCollateral', [jobKey, usdcAddr, 1n]], ['fundJob', [jobKey, usdcAddr, 1n, stranger.address]], ['claimHeld', [usdcAddr, lender.address]],
] as [string, unknown[]][]) console.log('stranger', fn, '->', await sim(stranger, fn, args))
for (const [fn, args] of [['settleJob', [jobKey, [advanceKey]]], ['liquidate', [advanceKey, 0n]], ['postCollateral', [jobKey, usdcAddr, 1n]]] as [string, unknown[]][]) console.log('borrower', fn, '->', await sim(borrower, fn, args))
for (const [fn, args] of [['settleJob', [jobKey, []]], ['liquidate', [advanceKey, 0n]]] as [string, unknown[]][]) console.log('client', fn, '->', await sim(client, fn, args))
console.log('lender wallet', JSON.stringify((await lender.get(`/lenders/${lender.address}/wallet`)).body).slice(0, 600))
// Failure and liquidation.
const fail = await client.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })
console.log('fail', fail.status, JSON.stringify(fail.body).slice(0, 300))
const liq = await lender.post(`/credit/advances/${adv.body.advanceId}/liquidate`, {})
console.log('liquidate', liq.status, JSON.stringify(liq.body).slice(0, 500))
await new Promise((r) => setTimeout(r, 1500))
console.log('session balance', await bal(session.address), 'borrower', await bal(borrower.address))
console.log('lender', JSON.stringify((await lender.get(`/lenders/${lender.address}`)).body).slice(0, 600))
const acts2 = (await lender.get(`/lenders/${lender.address}/actions`)).body as Json[]
console.log('actions after', JSON.stringify(acts2.map((a) => [a['kind'], a['amountAtomic']])))
for (const a of acts2) if (a['kind'] === 'withdraw') console.log('sent withdraw', JSON.stringify(await sendUnsigned(net, session, a['transaction'])))
console.log('session balance end', await bal(session.address), 'lender', await bal(lender.address))
console.log('borrower passport', JSON.stringify((await borrower.get(`/passport/${borrower.address}`)).body).slice(0, 300))

