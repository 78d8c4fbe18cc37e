// outsider14: a lender whose wallet cannot cover the amount gets an insufficient_balance lease that "expires at once",
// and the offer goes to the next lender. Does the refused lender get anything it could still pay with (an
// authorization whose on-chain deadline is still ahead), so that the borrower ends up with two advances?
import { devnetOf, freshAgent, give, registeredJob, sendUnsigned, type Json } from '../fixtures/outsider12-agent.ts'
import { privateKeyToAccount } from 'viem/accounts'

const url = process.argv[2] ?? 'http://127.0.0.1:18414'
const { net, key } = await devnetOf(url)
async function lender(ask: number, liquidity: bigint, wallet: bigint) {
  const a = await freshAgent(url, net, key, 'lender', wallet)
  const reg = (await a.post('/lenders/register', { availableLiquidityAtomic: liquidity.toString(), asset: 'USDC', networks: [net.slug], minFeeBps: ask, maxDurationSeconds: 2592000, acceptedRiskBands: ['A', 'B', 'C'] })).body
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  await give(net, a.account, session.address, 10n ** 18n, wallet)
  for (const tx of reg.setupTransactions) await sendUnsigned(net, session, tx)
  return { a, session }
}
const cheap = await lender(101, 1_000_000_000n, 100_000_000n)
const dear = await lender(301, 1_000_000_000n, 1_000_000_000n)
const borrower = await freshAgent(url, net, key, 'borrower', 500_000_000n)
const client = await freshAgent(url, net, key, 'jobClient', 2_000_000_000n)
const jobId = await registeredJob(client, borrower, net, 2_000_000_000n)
await new Promise((r) => setTimeout(r, 1500))
const supplier = ((await (await fetch(`${url}/suppliers`)).json()) as Json[])[0]!
const decision = (await borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: '500000000', purpose: 'x', supplier: supplier['name'], supplierDomain: supplier['domain'], repaymentSource: jobId, maximumFeeAtomic: '50000000' })).body
console.log('decision', decision.decision, JSON.stringify(decision.reasons))
const offerId = decision.offer.offerId
const match = (await borrower.post('/credit/match', { offerId })).body
console.log('lease to', match.lease?.lender === dear.a.address ? 'the dear lender' : match.lease?.lender === cheap.a.address ? 'the CHEAP lender' : JSON.stringify(match.lease))
const offer = (await borrower.get(`/credit/offers/${offerId}`)).body
console.log('offer', JSON.stringify(offer).slice(0, 1200))
console.log('cheap actions', JSON.stringify((await cheap.a.get(`/lenders/${cheap.a.address}/actions`)).body).slice(0, 800))
const counts = await fetch(`${url}/inspect/transitions`)
const transitions = await counts.json() as any
console.log('transitions', JSON.stringify(transitions).slice(0, 2500))

