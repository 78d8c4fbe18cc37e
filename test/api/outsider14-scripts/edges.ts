// outsider14: amounts at their edges on the routes that take one (0, 1 unit, below the least advance, 2^128-1, 2^256-1,
// 2^256, decimals, signs); every refusal should be a 400/409/422 problem with a stable code that changes nothing.
import { devnetOf, freshAgent, registeredJob } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18414'
const { net, key } = await devnetOf(url)
const max256 = (2n ** 256n - 1n).toString()
const lender = await freshAgent(url, net, key, 'lender', 0n)
const show = (what: string, r: { status: number; body: any }) => console.log(what.padEnd(44), r.status, r.body?.code ?? r.body?.decision ?? '', JSON.stringify(r.body?.reasons?.map((x: any) => x.code) ?? ''))
for (const liq of ['0', '1', (2n ** 128n - 1n).toString(), (2n ** 128n).toString()]) {
  const a = await freshAgent(url, net, key, 'lender', 0n)
  show(`register liquidity ${liq.slice(0, 12)}`, await a.post('/lenders/register', { availableLiquidityAtomic: liq, asset: 'USDC', networks: [net.slug], minFeeBps: 0, maxDurationSeconds: 2592000, acceptedRiskBands: ['A'] }))
}
await lender.post('/lenders/register', { availableLiquidityAtomic: '1000', asset: 'USDC', networks: [net.slug], minFeeBps: 10000, maxDurationSeconds: 1, acceptedRiskBands: ['C'] })
for (const amount of ['0', '-1', '1.5', '01', '1e3', '1000', '1001', max256, (2n ** 256n).toString()]) show(`withdraw ${amount.slice(0, 12)}`, await lender.post(`/lenders/${lender.address}/withdraw`, { amountAtomic: amount }))
const borrower = await freshAgent(url, net, key, 'borrower', 0n)
const client = await freshAgent(url, net, key, 'jobClient', 10_000_000n)
const jobId = await registeredJob(client, borrower, net, 10_000_000n)
const req = (amount: string, fee: string) => borrower.post('/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'job', amountAtomic: amount, purpose: 'x', supplier: 'Devnet demo supplier', supplierDomain: 'supplier.devnet', repaymentSource: jobId, maximumFeeAtomic: fee })
for (const [a, f] of [['999999', '0'], ['1000000', '0'], ['8000000', max256], ['8000001', '0'], ['1000000', (2n ** 256n).toString()]]) show(`request ${a} fee ${f!.slice(0, 8)}`, await req(a!, f!))
for (const q of ['0', '1', max256, (2n ** 256n).toString(), '-1']) show(`repay-transactions ?amountAtomic=${q.slice(0, 8)}`, await borrower.get(`/credit/advances/adv_1/repay-transactions?amountAtomic=${q}`))
for (const q of ['0', '1', max256]) show(`collateral-transactions ?amountAtomic=${q.slice(0, 8)}`, await borrower.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${q}`))
