import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent, devnetOf, freshAgent, registeredJob } from '../fixtures/outsider12-agent.ts'
const url = 'http://127.0.0.1:18412'
const { net, key } = await devnetOf(url)
const borrower = await freshAgent(url, net, key, 'borrower', 0n)
const client = await freshAgent(url, net, key, 'jobClient', 1_000_000_000n)
const jobId = await registeredJob(client, borrower, net, 1_000_000_000n)
const stranger = new Agent(url, privateKeyToAccount(generatePrivateKey()))
await stranger.signIn()
const body = (agent: string) => ({ agent, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: '1000000', purpose: 'x', supplier: 'Devnet demo supplier', supplierDomain: 'supplier.devnet', repaymentSource: jobId, maximumFeeAtomic: '100000' })
for (let i = 0; i < 3; i++) { const r = await stranger.post('/credit/request', body(stranger.address)); console.log('as itself', r.status, r.body.decision, JSON.stringify(r.body.reasons), r.body.offer?.offerId ?? null) }
const r2 = await stranger.post('/credit/request', body(borrower.address)); console.log('naming the borrower', r2.status, r2.body.code)
console.log('job', JSON.stringify((await stranger.get(`/credit/jobs/${jobId}`)).body).slice(0, 300))
