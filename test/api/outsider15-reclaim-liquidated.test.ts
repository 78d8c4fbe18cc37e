// An outsider's probe (outsider15) of today's reclaim rule after a liquidation on the open job (past due, the lender's
// POST .../liquidate): one covered whole by the collateral owes nothing, so its client reclaims the escrow and the
// borrower what is left of the collateral; one that left a shortfall keeps the job's escrow until the borrower pays the
// shortfall, then the client reclaims. The service follows each reclaim and reconciliation agrees.
import t from 'tap'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, fund, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { sendReclaim, tryReclaim } from './fixtures/reclaim.ts'

let h: Harness
let lender: ReadyLender
// The service's clock runs with the chain's: the advances are past due on both once the test moves them.
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs, config: { offerTtlSeconds: 3600 } })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const reader = () => new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.operator.privateKey)).publicClient
const getJob = (jobId: string) => reader().readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })
/** The client's reclaimJob: the revert's message if a simulation refuses it, else the sent transaction's status. */
async function reclaim(client: PrivateKeyAccount, jobId: string): Promise<string> {
  const attempt = await tryReclaim(h.network, client, jobId)
  if (attempt !== 'would succeed') return attempt
  return (await sendReclaim(h.network, client, jobId)).status
}

t.test('reclaim after a liquidation on the open job: covered whole, or after the borrower paid the shortfall', async (t) => {
  // C: 100 of collateral, an advance of 40: its liquidation takes all it owes from the collateral.
  const covered = 'job_o15_liq_covered'
  const c = await fundedJob(h, { jobId: covered, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  await fund(h.devnet, h.network, c.borrower.address, usdc(100))
  const posted = await new ChainAgent(h.network, c.borrower).postCollateral(covered, USDC, usdc(100))
  t.equal((await c.borrowerClient.post(`/credit/jobs/${covered}/collateral`, { amountAtomic: usdc(100).toString(), txHash: posted })).status, 201)
  const advanceC = (await fundAdvance(h, { borrower: c.borrower.address, borrowerClient: c.borrowerClient, lender, source: covered, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })).advance
  // D: no collateral, an advance of 20: its liquidation leaves a shortfall (the reserve holds nothing yet).
  const short = 'job_o15_liq_shortfall'
  const d = await fundedJob(h, { jobId: short, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  const advanceD = (await fundAdvance(h, { borrower: d.borrower.address, borrowerClient: d.borrowerClient, lender, source: short, amountAtomic: usdc(20), maximumFeeAtomic: usdc(2) })).advance

  const chainTimeMs = await advanceChainTime(h, Number(devnetReclaimDelaySeconds) + 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  const lenderClient = await signedIn(h.url, lender.account)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const liquidatedC = await lenderClient.post(`/credit/advances/${advanceC.advanceId}/liquidate`, {})
  t.equal(liquidatedC.status, 200, JSON.stringify(liquidatedC.body))
  t.equal(liquidatedC.body.shortfallAtomic, '0', 'C: the collateral covered it')
  const liquidatedD = await lenderClient.post(`/credit/advances/${advanceD.advanceId}/liquidate`, {})
  t.equal(liquidatedD.status, 200, JSON.stringify(liquidatedD.body))
  t.not(liquidatedD.body.shortfallAtomic, '0', 'D: a shortfall')

  // C: nothing owed, the job open: the client reclaims; the borrower gets what the liquidation left of its collateral.
  const jobC = await getJob(covered)
  t.equal(jobC.outstanding, 0n, 'C: nothing owed')
  const collateralLeft = jobC.collateral
  const borrowerC = new ChainAgent(h.network, c.borrower)
  const beforeC = await borrowerC.balanceOf(USDC, c.borrower.address)
  t.equal(await reclaim(c.jobClient, covered), 'success', 'C: reclaimed')
  t.equal(await borrowerC.balanceOf(USDC, c.borrower.address), beforeC + collateralLeft, 'C: the borrower got the collateral left, no more')
  await until(async () => (await operator.get(`/credit/jobs/${covered}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply C\'s reclaim')

  // D: the shortfall keeps the escrow until the borrower pays it; then the client reclaims.
  t.match(await reclaim(d.jobClient, short), /AdvancesOwed/, 'D: refused while the shortfall is owed')
  const repay = (await d.borrowerClient.get(`/credit/advances/${advanceD.advanceId}/repay-transactions`))
  t.equal(repay.status, 200, JSON.stringify(repay.body))
  await fund(h.devnet, h.network, d.borrower.address, BigInt(repay.body.amountAtomic))
  await new ChainAgent(h.network, d.borrower).sendAll(repay.body.transactions)
  await until(async () => (await operator.get(`/credit/advances/${advanceD.advanceId}`)).body.state === 'repaid', 20_000, 'D\'s shortfall repayment to be applied')
  t.equal(await reclaim(d.jobClient, short), 'success', 'D: reclaimed once the shortfall is paid')
  await until(async () => (await operator.get(`/credit/jobs/${short}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply D\'s reclaim')
  t.equal((await operator.get(`/credit/advances/${advanceC.advanceId}`)).body.state, 'liquidated')
  await expectReconciled(t, operator, h.network.slug)
})
