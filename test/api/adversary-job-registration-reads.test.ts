// A job's registration reads the chain beyond its funding proof: the borrower's consent (ERC-1271), the reclaim window,
// and every CollateralPosted from the funding block on (a getLogs per 2,000 blocks, a getBlock per posting, up to
// collateralPostingsPerJobMax postings). Who may register (the job's client or borrower) and whether the job is
// registered already were checked only after those reads, in the engine's command: any signed-in stranger, or a
// registration of a job already registered, made the service do them again at will (an adversary's finding, reading
// src/service/borrowers.ts). Now both are refused right after the funding proof is read (a used one, then who asks). The postings bound makes the order
// visible: over it the reads answer 422 too_many_collateral_postings.
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedAccount, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { collateralPostingsPerJobMax: 2 } })
})
t.teardown(async () => {
  await h.stop()
})

const follower = () => h.app.service.followers.get(h.network.slug)!

/** A job funded for a fresh borrower, who posts `postings` collateral postings of 1 unit before anyone registers it. */
async function fundedWithPostings(jobId: string, postings: number) {
  const borrower = await fundedAccount(h.devnet, h.network, usdc(10))
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const fundingTx = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(300), borrower.address)
  let last = fundingTx
  for (let i = 0; i < postings; i++) last = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, 1n)
  const mined = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: last })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= mined.blockNumber, 20_000, 'the follower past the postings')
  const body = {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(300).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
  }
  return { borrower, body }
}

t.test('a stranger\'s registration of someone else\'s job is refused before the chain reads', async (t) => {
  const { body } = await fundedWithPostings('job_adv_reads_stranger', 3)
  const stranger = await signedIn(h.url, await fundedAccount(h.devnet, h.network, 0n))
  const reply = await stranger.post('/credit/jobs', body)
  t.match(reply, { status: 403, body: { code: 'forbidden' } }, 'forbidden, not the answer of the postings read')
  t.equal((await stranger.get(`/credit/jobs/${body.jobId}`)).status, 404, 'nothing was created')
})

t.test('a second registration of a job is refused before the chain reads', async (t) => {
  const { borrower, body } = await fundedWithPostings('job_adv_reads_again', 0)
  const borrowerClient = await signedIn(h.url, borrower)
  t.equal((await borrowerClient.post('/credit/jobs', body)).status, 201)
  await fund(h.devnet, h.network, borrower.address, 3n)
  let posting = body.fundingTxHash
  for (let i = 0; i < 3; i++) {
    posting = await new ChainAgent(h.network, borrower).postCollateral(body.jobId, USDC, 1n)
    t.equal((await borrowerClient.post(`/credit/jobs/${body.jobId}/collateral`, { amountAtomic: '1', txHash: posting })).status, 201)
  }
  // The registration reads the postings up to the follower's last applied block: past them, they are all read.
  const mined = await new ChainAgent(h.network, borrower).publicClient.getTransactionReceipt({ hash: posting })
  await until(() => (follower().cursor?.blockNumber ?? -1n) >= mined.blockNumber, 20_000, 'the follower past the postings')
  const again = await borrowerClient.post('/credit/jobs', body)
  t.match(again, { status: 409, body: { code: 'proof_already_used' } }, 'its funding is used, not the answer of the postings read')
})
