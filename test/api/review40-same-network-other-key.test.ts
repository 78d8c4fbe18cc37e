// review40: a job id belongs to its earliest funding on any network, and since per-network keys (jobkey30) an id has
// two keys on one network too: its key there and its legacy key keccak256(utf8(jobId)), which registration still
// takes. The cross-network rule read only the other networks, so on the job's own network a funding of the id's other
// key, made later by one who learned the id (off chain, before the real registration), registered first and took the
// id: the real job, funded earlier, was refused 409 job_exists, its escrow idle until reclaimDelay. A registration now
// reads the id's other key on its own network too, and a funding there that came earlier (an earlier second, or
// earlier in the same block) refuses it 409 job_id_funded_elsewhere. Fails without the check: the later funding
// registers 201. And an ended job's id (the engine holds live jobs only) was registered again by a stranger under the
// other key, replacing the ended job's record: refused 409 job_exists now (201 without the check).
import t from 'tap'
import { createTestClient, createWalletClient, erc20Abi, http, maxUint256, parseGwei, type Hex, type PrivateKeyAccount } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { jobKey, legacyJobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const dueAt = () => new Date(Date.now() + 7 * 86_400_000).toISOString()
/** Past a block of the devnet (1 s) and a whole second of its timestamps: the second funding's block is later. */
const LATER_BY_MS = 2_500
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function register(borrower: Parameters<typeof signedIn>[1], jobId: string, amountAtomic: bigint, fundingTxHash: Hex) {
  return (await signedIn(h.url, borrower)).post('/credit/jobs', {
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: amountAtomic.toString(), dueAt: dueAt(), fundingTxHash,
  })
}

const keys = [
  ['its key on the network', (jobId: string) => jobKey(h.network, jobId)],
  ['its legacy key', legacyJobKey],
] as const
for (const [first, second] of [[keys[0], keys[1]], [keys[1], keys[0]]] as const) {
  t.test(`funded first under ${first[0]}, a later funding under ${second[0]} on the same network does not take the id`, async (t) => {
    const jobId = `job_${crypto.randomUUID()}`
    const borrower = await fundedAccount(h.devnet, h.network, 0n)
    const client = await fundedAccount(h.devnet, h.network, usdc(10))
    const realFunding = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(10), borrower.address, first[1](jobId))
    await pause(LATER_BY_MS)
    // One who learned the id meanwhile funds its other key on the same network, for itself, and registers first.
    const squatter = await fundedAccount(h.devnet, h.network, usdc(1))
    const squat = await new ChainAgent(h.network, squatter).fundJob(jobId, USDC, usdc(1), squatter.address, second[1](jobId))
    const squatted = await register(squatter, jobId, usdc(1), squat)
    t.equal(squatted.status, 409, `the later funding is refused (got ${squatted.status} ${squatted.body?.code} ${squatted.body?.detail ?? ''})`)
    t.equal(squatted.body.code, 'job_id_funded_elsewhere')
    const real = await register(borrower, jobId, usdc(10), realFunding)
    t.equal(real.status, 201, `the earlier funding registers (got ${real.status} ${real.body?.code} ${real.body?.detail ?? ''})`)
    t.equal(real.body.jobKey, first[1](jobId), 'under the key it was funded under')
  })
}

t.test("an ended job's id is not registered again, whatever key its new funding has", async (t) => {
  // The job's id is public once registered (its offers name it); after it ends, the engine no longer holds it live.
  const jobId = `job_${crypto.randomUUID()}`
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(10))
  const funding = await new ChainAgent(h.network, client).fundJob(jobId, USDC, usdc(10), borrower.address)
  t.equal((await register(borrower, jobId, usdc(10), funding)).status, 201)
  const completed = await (await signedIn(h.url, client)).post(`/credit/jobs/${jobId}/complete`, {})
  t.equal(completed.status, 200, `the job completes (got ${completed.status} ${completed.body?.code})`)
  const squatter = await fundedAccount(h.devnet, h.network, usdc(1))
  const squat = await new ChainAgent(h.network, squatter).fundJob(jobId, USDC, usdc(1), squatter.address, legacyJobKey(jobId))
  const again = await register(squatter, jobId, usdc(1), squat)
  t.equal(again.status, 409, `the id is not registered again (got ${again.status} ${again.body?.code} ${again.body?.detail ?? ''})`)
  // Refused before any chain read: the id's ended job is in the store (the chain's rule, job_id_funded_elsewhere, would
  // catch this one too, but not a squat on a network whose other networks' followers stopped).
  t.equal(again.body.code, 'job_exists')
  const view = await new CreditClient(h.url).get(`/credit/jobs/${jobId}`)
  t.match(view.body, { state: 'completed', client: client.address }, 'the ended job is still the real one')
})

t.test('two fundings of the two keys in one block (one second): the first in the block owns the id', async (t) => {
  const jobId = `job_${crypto.randomUUID()}`
  const chain = networkChain(h.network)
  const transport = http(h.network.rpcUrl)
  const agent = new ChainAgent(h.network, await fundedAccount(h.devnet, h.network, 0n))
  const parties: { account: PrivateKeyAccount; wallet: ReturnType<typeof createWalletClient> }[] = []
  for (let i = 0; i < 2; i++) {
    const account = await fundedAccount(h.devnet, h.network, usdc(10))
    const wallet = createWalletClient({ account, chain, transport })
    await agent.publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract({ account, chain, address: agent.token(USDC), abi: erc20Abi, functionName: 'approve', args: [h.network.creditContract, maxUint256] }) })
    parties.push({ account, wallet })
  }
  // The squatter's legacy-key funding first in the block (a higher tip), the real one after it.
  const fundIn = (party: { account: PrivateKeyAccount; wallet: ReturnType<typeof createWalletClient> }, key: Hex, tipGwei: string) =>
    party.wallet.writeContract({
      account: party.account, chain, address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [key, agent.token(USDC), usdc(10), party.account.address],
      gas: 300_000n, maxPriorityFeePerGas: parseGwei(tipGwei), maxFeePerGas: parseGwei('100'),
    })
  const anvil = createTestClient({ chain, transport, mode: 'anvil' })
  await anvil.setAutomine(false)
  await anvil.setIntervalMining({ interval: 0 })
  let hashes: Hex[]
  try {
    hashes = [await fundIn(parties[0]!, legacyJobKey(jobId), '50'), await fundIn(parties[1]!, jobKey(h.network, jobId), '1')]
    await anvil.mine({ blocks: 1 })
  } finally {
    await anvil.setIntervalMining({ interval: 1 })
    await anvil.setAutomine(true)
  }
  const receipts = await Promise.all(hashes.map((hash) => agent.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })))
  t.equal(receipts[0]!.blockNumber, receipts[1]!.blockNumber, 'in one block')
  t.ok(receipts[0]!.transactionIndex < receipts[1]!.transactionIndex, 'the legacy-key funding first')
  const second = await register(parties[1]!.account, jobId, usdc(10), hashes[1]!)
  t.equal(second.status, 409, `the second in the block is refused (got ${second.status} ${second.body?.code} ${second.body?.detail ?? ''})`)
  t.equal(second.body.code, 'job_id_funded_elsewhere')
  const first = await register(parties[0]!.account, jobId, usdc(10), hashes[0]!)
  t.equal(first.status, 201, `the first in the block registers (got ${first.status} ${first.body?.code} ${first.body?.detail ?? ''})`)
})
