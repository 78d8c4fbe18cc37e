// Outsider11's finding over HTTP against the devnet: one repaid advance of any size opened a job's receivable in the
// risk band, so a party lending to itself at 0 bps repaid the least advance once and then asked band A on an escrow
// its other wallet funded (and could take back with failJob). The receivable now counts only within the principal the
// borrower has repaid on the asset: the least advance repaid (1 USDC on the devnet, advanceMinAtomic) leaves 400 USDC
// on a 2,000 USDC job in band C; a borrower that repaid 400 USDC gets band A for 400.
import t from 'tap'
import type { PrivateKeyAccount } from 'viem/accounts'
import type { CreditClient } from '../../src/client/client.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { backingSourceBody, expectDocumented, fundAdvance, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let ownLender: ReadyLender
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
  // The party's own lender wallet, at no fee: lending to itself costs it nothing but gas.
  ownLender = await readyLender(h, { minFeeBps: 0, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

/** A borrower with a backing source that borrows `amountAtomic` from the party's own lender and repays it in full on chain. */
async function repaidOnBacking(borrower: PrivateKeyAccount, borrowerClient: CreditClient, sourceId: string, amountAtomic: bigint): Promise<void> {
  const fields = { sourceId, valueAtomic: usdc(2000), liquidationValueAtomic: usdc(2000), advanceRateBps: 5000 }
  const created = await borrowerClient.post('/credit/backing-sources', await backingSourceBody(h, borrower.address, fields))
  if (created.status !== 201) throw new Error(`source: ${created.status} ${JSON.stringify(created.body)}`)
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender: ownLender, source: sourceId, amountAtomic, maximumFeeAtomic: usdc(1), productType: 'asset-backed' })
  const owed = BigInt(funded.advance['lenderOwedAtomic']) + BigInt(funded.advance['reserveOwedAtomic'])
  const txHash = await new ChainAgent(h.network, borrower).repay(funded.advance['advanceKey'], USDC, owed)
  const repaid = await borrowerClient.post(`/credit/advances/${funded.advance['advanceId']}/repay`, { txHash })
  if (repaid.status !== 200 || repaid.body.repaid !== true) throw new Error(`repay: ${repaid.status} ${JSON.stringify(repaid.body)}`)
}

t.test('a borrower that repaid the least advance (1 USDC) asks 400 USDC on a 2,000 USDC job: band C, its coverage the collateral (none)', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, usdc(2))
  const { borrowerClient } = await fundedJob(h, { jobId: 'job_tiny_proof', receivableAtomic: usdc(2000), borrower })
  await repaidOnBacking(borrower, borrowerClient, 'src-tiny-proof', usdc(1))
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_tiny_proof', usdc(400), usdc(10)))
  t.equal(decision.status, 200)
  expectDocumented(t, doc, 'post', '/credit/request', decision)
  t.match(decision.body, { decision: 'approved', riskBand: 'C', coverageBps: 0 }, 'the receivable does not count: 1 USDC repaid vouches for 1')
})

t.test('a borrower that repaid 400 USDC asks 400 USDC on a 2,000 USDC job: band A, the receivable counts', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, usdc(401))
  const { borrowerClient } = await fundedJob(h, { jobId: 'job_full_proof', receivableAtomic: usdc(2000), borrower })
  await repaidOnBacking(borrower, borrowerClient, 'src-full-proof', usdc(400))
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_full_proof', usdc(400), usdc(10)))
  t.equal(decision.status, 200)
  t.match(decision.body, { decision: 'approved', riskBand: 'A', coverageBps: 50_000 })
})
