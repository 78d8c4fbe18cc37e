// outsider26: the credit contract called directly. Does postCollateral take a borrower's tokens for a job that has
// ended (reclaimed by its client, failed with nothing owed, settled), where no path (settleJob, failJob, liquidate,
// reclaimJob) can ever pay them out again? Cost to an attacker: none is needed, the borrower's own mistake (or a served
// collateral transaction signed late) would lock its tokens; the harm is the borrower's. Exits 1 if any ended job
// takes collateral. node --import tsx test/api/outsider26-scripts/collateral-after-end.ts
import type { Address } from 'viem'
import { ChainAgent } from '../../../src/client/chain.ts'
import { fundedAccount, startHarness, USDC, usdc } from '../../fixtures/service.ts'
import { pastReclaimDelay, sendReclaim } from '../fixtures/reclaim.ts'

const h = await startHarness()
let taken = false
try {
  const borrower = await fundedAccount(h.devnet, h.network, usdc(100))
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const post = async (jobId: string) => {
    try {
      const hash = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(1))
      const receipt = await new ChainAgent(h.network, borrower).publicClient.waitForTransactionReceipt({ hash })
      return receipt.status
    } catch (error) {
      return `refused: ${((error as Error).message.match(/reverted with the following reason:\n(.*)|Error: (\w+)\(/) ?? [])[0] ?? (error as Error).message.split('\n')[0]}`
    }
  }
  await new ChainAgent(h.network, client).fundJob('job_o26_reclaimed', USDC, usdc(10), borrower.address as Address)
  await pastReclaimDelay(h.network, 10)
  console.log('reclaim:', (await sendReclaim(h.network, client, 'job_o26_reclaimed')).status)
  const afterReclaim = await post('job_o26_reclaimed')
  console.log('postCollateral on the reclaimed job:', afterReclaim)
  taken = afterReclaim === 'success'
} finally {
  await h.stop()
}
console.log(taken ? 'FINDING: an ended job took collateral' : 'holds: an ended job takes no collateral')
process.exit(taken ? 1 : 0)
