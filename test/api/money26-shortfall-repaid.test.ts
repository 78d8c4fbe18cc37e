// money26 (B): a liquidation that left a shortfall, and the shortfall repaid since: by its job's settlement mined
// after the liquidation (the order outsider23's races.ts runs: liquidate, then complete), or by repayments of the
// liquidated advance. Before, the borrower's record kept the liquidation's shortfall for good (`shortfallAtomic`, which
// the credit score counts while above 0), and its passport's advance_repaid did not say that it repaid the shortfall
// the liquidated_with_shortfall entry before it recorded. Now the record owes what is still unpaid of the shortfall
// (min(shortfall, owed)), and the advance_repaid names the shortfall repaid and the liquidation. The penalty stays.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import type { CreditClient } from '../../src/client/client.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, fundedAccount, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { fundAdvance, type Json } from './fixtures/api.ts'

let h: Harness
let skewMs = 0
let lender: ReadyLender
let operator: CreditClient
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
})
t.teardown(async () => {
  await h.stop()
})

const details = (entry: Json) => JSON.parse(entry['details'] as string) as Json
async function passport(address: string): Promise<Json[]> {
  return (await operator.get(`/passport/${address}`)).body as Json[]
}

t.test('a shortfall repaid by repayments after the liquidation: the record owes what is left of it, the passport names it repaid', async (t) => {
  const jobId = 'job_m26_shortfall_repay'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(300) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })).status, 200)
  const liquidated = await lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(liquidated.status, 200)
  const shortfall = BigInt(liquidated.body.shortfallAtomic)
  t.ok(shortfall > 0n, 'nothing backs the advance: a shortfall')
  const record = () => h.app.service.engine.getBorrower(borrower.address)!
  t.equal(record().shortfallAtomic, shortfall, 'the borrower owes the shortfall')
  const reputationAfterLiquidation = record().reputationBps

  // Anyone repays; a part first, then the rest.
  const payerAccount = await fundedAccount(h.devnet, h.network, usdc(500))
  const payer = await signedIn(h.url, payerAccount)
  const agent = new ChainAgent(h.network, payerAccount)
  const repay = async (amountAtomic: bigint) => {
    const served = await payer.get(`/credit/advances/${advance.advanceId}/repay-transactions?amountAtomic=${amountAtomic}&from=${payerAccount.address}`)
    t.equal(served.status, 200)
    const sent = await agent.sendAll(served.body.transactions)
    const reported = await payer.post(`/credit/advances/${advance.advanceId}/repay`, { txHash: sent[sent.length - 1] })
    t.equal(reported.status, 200)
    return reported.body
  }
  const part = usdc(30)
  const first = await repay(part)
  const owedAfterFirst = BigInt(first.lenderOwedAtomic) + BigInt(first.reserveOwedAtomic)
  t.equal(record().shortfallAtomic, shortfall < owedAfterFirst ? shortfall : owedAfterFirst, 'what is left of the shortfall: min(shortfall, owed)')
  await repay(owedAfterFirst)
  t.equal(record().shortfallAtomic, 0n, 'the shortfall is repaid: the borrower owes none of it')
  t.equal(record().reputationBps, reputationAfterLiquidation + 100, 'the shortfall penalty stays: only the repayment reward (+100 for 100 USDC) is added')

  const entries = await passport(borrower.address)
  const short = entries.find((e) => e['kind'] === 'liquidated_with_shortfall')!
  const repaid = entries.find((e) => e['kind'] === 'advance_repaid')!
  t.ok(repaid['sequence'] > short['sequence'], 'the repayment is a later entry')
  t.match(details(repaid), { advanceId: advance.advanceId, shortfallRepaidAtomic: shortfall.toString(), liquidationTxHash: details(short)['txHash'] }, 'it names the shortfall repaid and the liquidation')
})

t.test('a job settled after the liquidation of its advance past due pays the shortfall: the record owes none of it', async (t) => {
  const jobId = 'job_m26_shortfall_settled'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const chainTimeMs = await advanceChainTime(h, 2 * 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  // Sessions signed before the clock moved: sign in again.
  const lenderClient = await signedIn(h.url, lender.account)
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const liquidated = await lenderClient.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(liquidated.status, 200)
  const shortfall = BigInt(liquidated.body.shortfallAtomic)
  t.ok(shortfall > 0n, 'no collateral: a shortfall')
  const record = () => h.app.service.engine.getBorrower(borrower.address)!
  t.equal(record().shortfallAtomic, shortfall)

  const completed = await (await signedIn(h.url, jobClient)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, 'the escrow pays the liquidated advance in full')
  t.equal((await operator.get(`/credit/advances/${advance.advanceId}`)).body.state, 'repaid')
  t.equal(record().shortfallAtomic, 0n, 'the settlement repaid the shortfall')
  const entries = await passport(borrower.address)
  t.same(entries.map((e) => e['kind']), ['liquidated_with_shortfall', 'advance_repaid'])
  t.match(details(entries[1]!), { advanceId: advance.advanceId, shortfallRepaidAtomic: shortfall.toString(), liquidationTxHash: liquidated.body.txHash })
})
