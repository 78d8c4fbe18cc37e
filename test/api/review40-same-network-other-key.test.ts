// review40: a job id belongs to its earliest funding on any network, and since per-network keys (jobkey30) an id has
// two keys on one network too: its key there and its legacy key keccak256(utf8(jobId)), which registration still
// takes. The cross-network rule read only the other networks, so on the job's own network a funding of the id's other
// key, made later by one who learned the id (off chain, before the real registration), registered first and took the
// id: the real job, funded earlier, was refused 409 job_exists, its escrow idle until reclaimDelay. A registration now
// reads the id's other key on its own network too, and a funding there that came earlier refuses it 409
// job_id_funded_elsewhere. Fails without the check: the later funding registers 201.
import t from 'tap'
import type { Hex } from 'viem'
import { jobKey, legacyJobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
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
