// Job ids are one namespace in the service, but the credit contract keys a job by keccak256(jobId) on each network
// apart. A client's fundJob on one network publishes its id (calldata, then the JobFunded log); a stranger who funded
// the same id on another network, for one atomic unit and gas, naming itself as borrower, and registered first, owned
// the id in the service: the real job's registration answered 409 job_exists, so its borrower got no credit on it and
// its client's escrow waited out the contract's reclaimDelay (10 days on the devnet). An id now belongs to its earliest
// funding on any network. Fails on c2ad961: the squat registers (201) and the real job answers 409 job_exists.
import t from 'tap'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())

t.test('a job id funded on one network cannot be taken in the service by a later funding of that id on another', async (t) => {
  const other = h.devnet.networks[1] as NetworkConfig
  const jobId = `job_${crypto.randomUUID()}`
  const dueAt = new Date(Date.now() + 7 * 86_400_000).toISOString()

  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(5000))
  const fundingTxHash = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(5000), borrower.address)

  // The stranger read the id from the victim's mined fundJob and funds it again elsewhere, one atomic unit, in a block
  // after it by its chain's clock (the two devnets' clocks are not the same).
  const stranger = await fundedAccount(h.devnet, other, 1n)
  const fundedAt = (await new ChainAgent(h.network, client).publicClient.getTransactionReceipt({ hash: fundingTxHash })).blockNumber
  const fundedAtSeconds = (await new ChainAgent(h.network, client).publicClient.getBlock({ blockNumber: fundedAt })).timestamp
  const otherTest = createTestClient({ chain: networkChain(other), transport: http(other.rpcUrl), mode: 'anvil' })
  const otherHead = (await new ChainAgent(other, stranger).publicClient.getBlock()).timestamp
  if (otherHead < fundedAtSeconds + 1n) await otherTest.setNextBlockTimestamp({ timestamp: fundedAtSeconds + 1n })
  const squatTxHash = await new ChainAgent(other, stranger).fundJob(jobId, USDC, 1n, stranger.address)
  const squat = await (await signedIn(h.url, stranger)).post('/credit/jobs', {
    jobId, network: other.slug, asset: USDC, agent: stranger.address, receivableAtomic: '1', dueAt, fundingTxHash: squatTxHash,
  })
  t.equal(squat.status, 409, 'the later funding on another network does not take the id')
  t.equal(squat.body.code, 'job_id_funded_elsewhere')

  const registered = await (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(5000).toString(), dueAt, fundingTxHash,
  })
  t.equal(registered.status, 201, `the job funded first registers (got ${registered.status} ${registered.body?.code})`)
  t.equal(registered.body.network, h.network.slug)
})
