// A stranger repays an advance 1 atomic unit at a time, straight on the contract (which takes any amount from anyone):
// each Repaid costs it gas and 1 unit, and the chain follower counts every one. The advance listed every payment, so
// the list, each write of the advance and each copy the next payment made grew without bound (quadratic work for the
// follower, megabytes per advance read). Now it lists the latest REPAYMENTS_LISTED_MAX and sums the earlier ones; every
// payment still counts, and the ledger still equals the chain (an adversary's finding, reading machines/advance.ts).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { REPAYMENTS_LISTED_MAX } from '../../machines/index.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { expectDocumented, expectReconciled, fundAdvance, openApiDocument, until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('repayments of 1 unit, more than an advance lists, are all counted and the list stays bounded', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_adv_flood', receivableAtomic: usdc(500) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_adv_flood', amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const lenderOwed = BigInt(advance.lenderOwedAtomic)
  const reserveOwed = BigInt(advance.reserveOwedAtomic)

  const stranger = new ChainAgent(h.network, await fundedAccount(h.devnet, h.network, usdc(200)))
  const tiny = REPAYMENTS_LISTED_MAX + 8
  for (let i = 0; i < tiny; i++) await stranger.repay(advance.advanceKey, USDC, 1n)
  const reply = () => lender.client.get(`/credit/advances/${advance.advanceId}`)
  const read = async () => (await reply()).body
  await until(async () => BigInt((await read()).lenderOwedAtomic) === lenderOwed - BigInt(tiny), 30_000, 'the follower counted every 1-unit repayment')
  const flooded = await read()
  t.equal(flooded.repayments.length, REPAYMENTS_LISTED_MAX, 'the advance lists only its latest payments')
  t.same(flooded.earlierRepayments, { count: tiny - REPAYMENTS_LISTED_MAX, lenderAmountAtomic: String(tiny - REPAYMENTS_LISTED_MAX), reserveAmountAtomic: '0' }, 'the earlier ones are summed')
  expectDocumented(t, await openApiDocument(h.url), 'get', '/credit/advances/{advanceId}', await reply())

  // The rest in one payment: the advance is repaid, and everything counted (listed or summed) is what the chain moved.
  const rest = await stranger.repay(advance.advanceKey, USDC, lenderOwed + reserveOwed)
  await until(async () => (await read()).state === 'repaid', 30_000, 'the advance repaid')
  const repaid = await read()
  t.equal(repaid.repayments.at(-1).txHash, rest, 'the last payment is listed')
  const listed = repaid.repayments.reduce((sum: bigint, r: { lenderAmountAtomic: string }) => sum + BigInt(r.lenderAmountAtomic), 0n)
  t.equal(listed + BigInt(repaid.earlierRepayments.lenderAmountAtomic), lenderOwed, 'listed and summed payments pay the lender exactly what it was owed')
  const record = h.app.service.engine.getLender(lender.account.address)
  t.equal(record?.deployedAtomic, 0n, 'the principal came back')
  t.equal(record?.feesEarnedAtomic, BigInt(advance.feeAtomic) - BigInt(advance.insuranceAtomic), 'the fee, less the reserve\'s share, was earned')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})
