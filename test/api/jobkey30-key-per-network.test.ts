// outsider29 F2, a squat by key alone: a job id belongs to its earliest funding on any network, and that funding was
// read by key, keccak256(utf8(jobId)), the same on every network. A fundJob's calldata carries the key, so a watcher
// of a public mempool funded that key on another network first, never knowing the id, and the honest registration was
// refused 409 job_id_funded_elsewhere (its escrow idle until reclaimDelay). A job's key is now one per network
// (keccak256(abi.encodePacked(chainId, creditContract, jobId))): the key in the calldata says nothing of the id's key
// elsewhere. The cross-network rule still reads, on each other network, the id's key there and its legacy key; a
// client that funded under the legacy key (before the upgrade) still registers, and its job is settled, collateralised
// and lent on under that key. Fails on 55aed33: the squatted registration answers 409 job_id_funded_elsewhere.
import t from 'tap'
import { decodeFunctionData, type Hex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { jobKey, legacyJobKey } from '../../src/chain/ids.ts'
import { ChainAgent, type WireTransaction } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const other = h.devnet.networks[1] as NetworkConfig
const dueAt = () => new Date(Date.now() + 7 * 86_400_000).toISOString()
const api = new CreditClient(h.url)
/**
 * How long after the first funding the second is sent: past the devnet's uncertainty in ordering two chains' fundings
 * (both block times, 1 s each, two seconds for whole-second timestamps, and the reads' span), so that the first is
 * the earlier one by the chains' clocks and by their timestamps alike (closer, the same second is a tie, which the
 * first registration takes).
 */
const FIRST_BY_MS = 6_000
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The served approve + fundJob of a job on the harness's network, as GET .../funding-transactions gives them. */
async function servedFunding(jobId: string, client: `0x${string}`, borrower: `0x${string}`, amountAtomic: bigint): Promise<{ transactions: WireTransaction[]; key: Hex }> {
  const query = `network=${h.network.slug}&asset=${USDC}&receivableAtomic=${amountAtomic}&agent=${borrower}&client=${client}`
  const reply = await api.get(`/credit/jobs/${jobId}/funding-transactions?${query}`)
  if (reply.status !== 200) throw new Error(`funding-transactions: ${reply.status} ${JSON.stringify(reply.body)}`)
  const fund = reply.body.transactions[1] as WireTransaction
  const { args } = decodeFunctionData({ abi: creditFacilityV2Abi, data: fund.data as Hex })
  return { transactions: reply.body.transactions, key: (args as readonly unknown[])[0] as Hex }
}

async function register(borrower: Parameters<typeof signedIn>[1], jobId: string, amountAtomic: bigint, fundingTxHash: Hex) {
  return (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: amountAtomic.toString(), dueAt: dueAt(), fundingTxHash,
  })
}

t.test("a stranger who funds the honest job's key on another network first, never knowing its id, takes nothing", async (t) => {
  const jobId = `job_${crypto.randomUUID()}`
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const served = await servedFunding(jobId, client.address, borrower.address, usdc(100))
  t.equal(served.key, jobKey(h.network, jobId), "the served fundJob carries the job's key on its network")
  t.not(served.key, jobKey(other, jobId), 'which is not its key on the other network')
  t.not(served.key, legacyJobKey(jobId), 'nor its legacy key')

  // The stranger reads the key from the pending fundJob (no id in it) and funds it on the other network first.
  const stranger = await fundedAccount(h.devnet, other, 1n)
  await new ChainAgent(other, stranger).fundJob('an id it never knew', USDC, 1n, stranger.address, served.key)
  await pause(FIRST_BY_MS)
  const clientChain = new ChainAgent(h.network, client)
  const [, fundingTxHash] = await clientChain.sendAll(served.transactions)

  const registered = await register(borrower, jobId, usdc(100), fundingTxHash as Hex)
  t.equal(registered.status, 201, `the honest job registers (got ${registered.status} ${registered.body?.code} ${registered.body?.detail ?? ''})`)
  t.equal(registered.body.jobKey, served.key, 'and keeps the key it was funded under')
})

for (const [rule, keyOf] of [['its key there', (jobId: string) => jobKey(other, jobId)], ['its legacy key', legacyJobKey]] as const) {
  t.test(`an id funded first on another network under ${rule} still owns the id`, async (t) => {
    const jobId = `job_${crypto.randomUUID()}`
    // One who knew the id (it leaked off chain) funds it on the other network first.
    const first = await fundedAccount(h.devnet, other, 1n)
    await new ChainAgent(other, first).fundJob(jobId, USDC, 1n, first.address, keyOf(jobId))
    await pause(FIRST_BY_MS)
    const borrower = await fundedAccount(h.devnet, h.network, 0n)
    const client = await fundedAccount(h.devnet, h.network, usdc(10))
    const fundingTxHash = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(10), borrower.address)
    const later = await register(borrower, jobId, usdc(10), fundingTxHash)
    t.equal(later.status, 409, `the later funding is refused (got ${later.status} ${later.body?.code})`)
    t.equal(later.body.code, 'job_id_funded_elsewhere')
  })
}

t.test('a job funded under the legacy key (before the upgrade) registers, takes collateral and an advance, and settles under it', async (t) => {
  const jobId = `job_${crypto.randomUUID()}`
  const legacy = legacyJobKey(jobId)
  const borrower = await fundedAccount(h.devnet, h.network, usdc(20))
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const fundingTxHash = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(300), borrower.address, legacy)
  const registered = await register(borrower, jobId, usdc(300), fundingTxHash)
  t.equal(registered.status, 201, `registered (got ${registered.status} ${registered.body?.code} ${registered.body?.detail ?? ''})`)
  t.equal(registered.body.jobKey, legacy, 'the job keeps its legacy key')

  // Collateral: the served postCollateral names the legacy key, and its report counts.
  const borrowerClient = await signedIn(h.url, borrower)
  const steps = await api.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${usdc(20)}`)
  t.equal(steps.status, 200)
  const post = steps.body.transactions[1] as WireTransaction
  t.equal((decodeFunctionData({ abi: creditFacilityV2Abi, data: post.data as Hex }).args as readonly unknown[])[0], legacy, 'postCollateral under the legacy key')
  const [, postingTx] = await new ChainAgent(h.network, borrower).sendAll(steps.body.transactions)
  const posted = await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(20).toString(), txHash: postingTx })
  t.ok(posted.status === 200 || posted.status === 201, `the posting counts (got ${posted.status} ${posted.body?.code})`)
  t.equal(posted.body.totalCollateralAtomic, usdc(20).toString())

  // An advance: the lease authorization names the job by its legacy key (paySupplier reverts UnknownJob otherwise).
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const funded = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(5), maximumFeeAtomic: usdc(1) })
  t.ok(funded.advance.advanceId, 'the lender paid the supplier on the job')

  const completed = await (await signedIn(h.url, client)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, `the job completes (got ${completed.status} ${completed.body?.code} ${completed.body?.detail ?? ''})`)
  const reader = new ChainAgent(h.network, client).publicClient
  const onChain = await reader.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [legacy] })
  t.equal(onChain.status, 2, 'Settled on chain under the legacy key')
  t.equal(onChain.outstanding, 0n)
})
