// An outsider's finding (outsider29): only a job's client could reclaim it on chain, so a client that went silent
// (never completing, failing nor reclaiming its job) kept its borrower's collateral in the credit contract for good
// unless an operator ended the job, though nothing was advanced and nobody was owed; the client's cost was an escrow
// it could take back, that collateral with it, whenever it liked (a job of 1 USDC held the borrower's 40). Now the
// borrower may call reclaimJob too, by the same rules: the escrow goes back to the client and the collateral to the
// borrower, and the service applies the JobReclaimed as a client's (the job ends failed, escrow_reclaimed; the borrower
// is neither suspended nor penalised; reconciliation agrees). Fails on the contract before: the borrower's reclaim
// reverts NotClient.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedJob, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectReconciled, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim, tryReclaim } from './fixtures/reclaim.ts'

const h = await startHarness()
t.teardown(() => h.stop())

t.test('the borrower of a job its client left alone takes its collateral back on chain; the service ends the job as a reclaim', async (t) => {
  const jobId = `job_o29_${crypto.randomUUID()}`
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1), dueInSeconds: 3600 })
  await fund(h.devnet, h.network, borrower.address, usdc(40))
  const agent = new ChainAgent(h.network, borrower)
  const postTx = await agent.postCollateral(jobId, USDC, usdc(40))
  const posted = await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(40).toString(), txHash: postTx })
  t.equal(posted.status, 201, 'the collateral is counted on the job')

  t.match(await tryReclaim(h.network, borrower, jobId), /ReclaimTooEarly/, 'not before the reclaim time, as for the client')
  await pastReclaimDelay(h.network)
  const borrowerBefore = await agent.balanceOf(USDC, borrower.address)
  const clientBefore = await agent.balanceOf(USDC, jobClient.address)
  const receipt = await sendReclaim(h.network, borrower, jobId)
  t.equal(receipt.status, 'success', 'the borrower reclaims the job its client left alone')
  t.equal(await agent.balanceOf(USDC, borrower.address) - borrowerBefore, usdc(40), 'its collateral is back')
  t.equal(await agent.balanceOf(USDC, jobClient.address) - clientBefore, usdc(1), 'the escrow goes back to the client')

  await until(async () => (await borrowerClient.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal((await borrowerClient.get(`/credit/jobs/${jobId}`)).body.state, 'failed', 'the job ended as a reclaimed one')
  const record = h.app.service.engine.getBorrower(borrower.address)
  t.equal(record?.suspended, false, 'the borrower is not suspended')
  t.same((await borrowerClient.get(`/passport/${borrower.address}`)).body, [], 'nor has a passport event')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})

t.test('a client\'s failure sent after its borrower\'s reclaim, before the service learned it, suspends nobody', async (t) => {
  const jobId = `job_o29_${crypto.randomUUID()}`
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(1), dueInSeconds: 3600 })
  await pastReclaimDelay(h.network)
  const follower = h.app.service.followers.get(h.network.slug)!
  await follower.stop()
  t.equal((await sendReclaim(h.network, borrower, jobId)).status, 'success', 'the borrower reclaims')
  const failed = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })
  t.match({ status: failed.status, code: failed.body?.code }, { status: 409, code: 'contract_job_not_open' }, 'the client\'s failure is refused: its failJob reverted, nothing acknowledged')
  follower.start()
  await until(async () => (await borrowerClient.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  t.equal(h.app.service.engine.getBorrower(borrower.address)?.suspended, false, 'the borrower is not suspended')
  t.same((await borrowerClient.get(`/passport/${borrower.address}`)).body, [], 'nor has a passport event')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})
