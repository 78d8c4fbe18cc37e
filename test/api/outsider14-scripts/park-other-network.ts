// outsider14: a lender registered on two networks that funds its session wallet on one only. A stranger's offer on the
// other network leases it, finds the wallet there empty (insufficient_balance) and parks the lender "out of every
// book" until its wallet changes: does that keep it out of matching on the network it funded?
import { privateKeyToAccount } from 'viem/accounts'
import { devnetOf, freshAgent, give, registeredJob, sendUnsigned, type CatalogNetwork, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18414'
const { catalog, net: netA, key } = await devnetOf(url)
const netB = (catalog['networks'] as CatalogNetwork[]).find((n) => n.slug !== netA.slug)!
const supplier = ((await (await fetch(`${url}/suppliers`)).json()) as Json[])[0]!
const ask = Number(process.argv[3] ?? 20)
async function lender(networks: CatalogNetwork[], minFeeBps: number, fundOn: CatalogNetwork[]) {
  const a = await freshAgent(url, netA, key, 'lender', 1_000_000_000n)
  const reg = await a.post('/lenders/register', { availableLiquidityAtomic: '1000000000', asset: 'USDC', networks: networks.map((n) => n.slug), minFeeBps, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] })
  const session = privateKeyToAccount(reg.body.sessionKey.privateKey)
  for (const n of fundOn) {
    await give(n, a.account, session.address, 10n ** 18n, 1_000_000_000n)
    for (const tx of reg.body.setupTransactions) if (tx.network === n.slug) await sendUnsigned(n, session, tx)
  }
  return a
}
async function borrowOn(net: CatalogNetwork, amount: string) {
  const borrower = await freshAgent(url, net, key, 'borrower', 0n)
  const client = await freshAgent(url, net, key, 'jobClient', 200_000_000n)
  const jobId = await registeredJob(client, borrower, net, 200_000_000n)
  const decision = (await borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: amount, purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '10000000' })).body
  if (decision.decision !== 'approved') throw new Error(JSON.stringify(decision))
  return (await borrower.post('/credit/match', { offerId: decision.offer.offerId })).body.lease
}
const victim = await lender([netA, netB], ask, [netA])
const rival = await lender([netA], ask + 30, [netA])
await new Promise((r) => setTimeout(r, 1500))
const name = (l: Json | null) => (l === null ? 'nobody' : l['lender'] === victim.address ? 'the victim (cheapest)' : l['lender'] === rival.address ? 'the rival (dearer)' : l['lender'])
if (process.argv[4] !== 'control') {
  const onB = await borrowOn(netB, '5000000')
  console.log('stranger on', netB.slug, 'leased to', name(onB), onB?.state ?? '')
}
const onA = await borrowOn(netA, '5000000')
console.log('honest borrower on', netA.slug, 'leased to', name(onA))
const wallet = (await victim.get(`/lenders/${victim.address}/wallet`)).body
console.log('victim wallet', JSON.stringify(wallet.holdings), JSON.stringify(wallet.activity).slice(0, 300))
