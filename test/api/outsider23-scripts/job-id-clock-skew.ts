// outsider23: a job id belongs to its earliest funding on any network (src/service/borrowers.ts refuseLaterFunding,
// outsider8's finding), and "earliest" compares the two chains' block timestamps. Chains' clocks are not one clock:
// a network whose block timestamps run behind another's (block times of seconds, a sequencer's timestamps that may lag,
// a testnet's clock) lets a squatter fund the id there LATER in real time and still be "earlier". Here devnet-a's
// chain runs 10 minutes ahead of devnet-b's (anvil's time moved, as tests do). The victim's client funds a job on
// devnet-a for its borrower, who registers it a little later (the client hands it the id: llms.txt's flow); meanwhile
// a stranger who read the id from the mined fundJob funds the same id on devnet-b, 1 atomic unit, naming itself the
// borrower, and registers it: 201. The real job's registration is then refused (409), its borrower gets no credit
// on it and the client's escrow waits out reclaimDelay (10 days on the devnet). Cost to the squatter: the gas of an
// approve and a fundJob, and 1 atomic unit, on the lagging network. Exits 1 while the squat wins.
// node --import tsx test/api/outsider23-scripts/job-id-clock-skew.ts
import { createTestClient, http } from 'viem'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { networkChain } from '../../../src/chain/clients.ts'
import { ChainAgent } from '../../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../../fixtures/service.ts'

const h = await startHarness()
let squatWins = false
try {
  const a = h.network
  const b = h.devnet.networks[1] as NetworkConfig
  const anvilA = createTestClient({ chain: networkChain(a), transport: http(a.rpcUrl), mode: 'anvil' })
  await anvilA.increaseTime({ seconds: 600 })
  await anvilA.mine({ blocks: 1 })

  const jobId = `job_${crypto.randomUUID()}`
  const dueAt = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const borrower = await fundedAccount(h.devnet, a, 0n)
  const client = await fundedAccount(h.devnet, a, usdc(5000))
  const fundingTxHash = await new ChainAgent(a, client).fundJob(jobId, USDC, usdc(5000), borrower.address)
  const clientChain = new ChainAgent(a, client)
  const fundedA = (await clientChain.publicClient.getBlock({ blockNumber: (await clientChain.publicClient.getTransactionReceipt({ hash: fundingTxHash })).blockNumber })).timestamp

  // The stranger, after the real funding was mined.
  const squatter = await fundedAccount(h.devnet, b, 1n)
  const squatTx = await new ChainAgent(b, squatter).fundJob(jobId, USDC, 1n, squatter.address)
  const squatChain = new ChainAgent(b, squatter)
  const fundedB = (await squatChain.publicClient.getBlock({ blockNumber: (await squatChain.publicClient.getTransactionReceipt({ hash: squatTx })).blockNumber })).timestamp
  console.log('fundedAt on devnet-a (first in real time):', new Date(Number(fundedA) * 1000).toISOString(), '| on devnet-b (after it):', new Date(Number(fundedB) * 1000).toISOString())
  const squat = await (await signedIn(h.url, squatter)).post('/credit/jobs', { jobId, network: b.slug, asset: USDC, agent: squatter.address, receivableAtomic: '1', dueAt, fundingTxHash: squatTx })
  console.log('the squat registration:', squat.status, squat.body.code ?? squat.body.state)
  const real = await (await signedIn(h.url, borrower)).post('/credit/jobs', { jobId, network: a.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(5000).toString(), dueAt, fundingTxHash })
  console.log('the real job\'s registration:', real.status, real.body.code ?? real.body.state)
  squatWins = squat.status === 201 && real.status !== 201
} finally {
  await h.stop()
}
console.log(squatWins ? 'the later funding on the lagging chain owns the id' : 'the earliest funding in real time owns the id')
process.exit(squatWins ? 1 : 0)
