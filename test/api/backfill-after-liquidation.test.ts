// The settlement backfill (src/service/operator-commands.ts backfillCollateral: collateral posted before a job's
// registration under a release that did not read such postings, counted when the settlement paid the borrower more)
// on a job whose advance was liquidated past due while it was open: that liquidation took collateral from the open
// job, so the contract holds the postings less what it used, and the backfill must compare with that (review of the
// reclaim change, finding 2), else the settlement is never recorded (503 forever).
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { advanceChainTime, fund, fundedAccount, readyLender, signedIn, startHarness, usdc, USDC, type Harness, type ReadyLender } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { jobKey } from '../../src/chain/ids.ts'

let h: Harness
let lender: ReadyLender
// The service's clock runs with the chain's: the advance is past due on both once the test moves them.
let skewMs = 0
t.before(async () => {
  h = await startHarness({ clock: () => Date.now() + skewMs })
  lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const follower = () => h.app.service.followers.get(h.network.slug)!

t.test('a settlement backfill after a liquidation on the open job counts the old posting and is recorded', async (t) => {
  const jobId = 'job_bf_liquidated'
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const fundingTx = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(300), borrower.address)
  await fund(h.devnet, h.network, borrower.address, usdc(40))
  const oldPosting = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(40))
  const posted = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: oldPosting })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= posted.blockNumber, 20_000, 'the follower past the posting')
  // Registered as a release before registrations read earlier postings did it: the job without its 40 of collateral.
  const service = h.app.service
  const dueAtMs = service.now() + 24 * 3600 * 1000
  await service.run(null, () => service.engine.createJob({
    jobId, jobKey: jobKey(h.network, jobId), client: client.address, borrower: borrower.address, network: h.network.slug, asset: USDC, receivableAtomic: usdc(300),
    dueAtMs, funding: { network: h.network.slug, txHash: fundingTx, logIndex: 0 }, caller: borrower.address,
  }, service.now()), () => [])

  // After the registration: 150 of collateral, reported, more than the advance will owe.
  const borrowerClient = await signedIn(h.url, borrower)
  await fund(h.devnet, h.network, borrower.address, usdc(150))
  const reported = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(150))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(150).toString(), txHash: reported })).status, 201)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
  const owed = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic)

  // Past due on the chain and the service: the lender liquidates on the open job, all of it from the collateral.
  const chainTimeMs = await advanceChainTime(h, 25 * 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  // Sessions signed in before the jump have expired on the service's clock.
  const lenderClient = await signedIn(h.url, lender.account)
  const operatorClient = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const liquidated = await lenderClient.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(liquidated.status, 200, JSON.stringify(liquidated.body))
  t.equal(liquidated.body.shortfallAtomic, '0', 'the collateral covered it')

  // The contract pays the borrower the escrow and all collateral left, the 40 the service never counted included.
  const completed = await (await signedIn(h.url, client)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, JSON.stringify(completed.body))
  t.equal(completed.body.toBorrowerAtomic, (usdc(300) + usdc(190) - owed).toString(), 'as the contract paid')
  const job = (await operatorClient.get(`/credit/jobs/${jobId}`)).body
  t.equal(job.collateralAtomic, usdc(190).toString(), 'the old posting is counted')
  await expectReconciled(t, operatorClient, h.network.slug)
})
