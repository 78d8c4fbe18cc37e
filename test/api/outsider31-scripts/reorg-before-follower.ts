// outsider31: a repayment REPORTED (the fast path, POST /credit/advances/{id}/repay), then taken back by the chain
// before the chain follower read its block. outsider19 (test/api/outsider19-reorg-after-repayment.test.ts) showed the
// follower stops when the chain takes back a block it APPLIED (its cursor's hash). Here the follower never applied
// the block: the route counted the Repaid at the network's confirmations, and the node reorganised that block away
// before the follower's next poll. The follower then reads the new history from its cursor (unchanged), finds nothing
// wrong, and goes on `ok`: the service keeps a repayment no transaction proves, does not count the new history's
// repayment of the same advance (every later one is 409 repayment_mismatch, also from the follower), and the job's
// completion is refused (409 contract_settlement_differs): the honest lender's advance is not settled by the service
// until an operator acts. Only a reconciliation (start-up or POST /operator/reconcile) shows it.
// The README promises the follower `stopped` after "a reorganisation deeper than the confirmations".
// Needs no running service: it starts its own devnet and service (test fixtures) with a follower polling every 4 s
// (a real network's default is 1 s; the devnet's 50 ms makes the window too short to hit by hand).
//   node --import tsx test/api/outsider31-scripts/reorg-before-follower.ts
// Exits 1 while the follower goes on over the new history (the finding holds), 0 once it stops.
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../../src/chain/artifacts.ts'
import { startDevnet } from '../../../src/chain/devnet.ts'
import { ChainAgent } from '../../../src/client/chain.ts'
import { CreditClient } from '../../../src/client/client.ts'
import { fund, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc } from '../../fixtures/service.ts'
import { fundAdvance, until, type Json } from '../fixtures/api.ts'

const devnet = await startDevnet({ pollingIntervalMs: 4000 })
const h = await startHarness({ devnet })
let holds = false
try {
  const lender = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o31_reorg'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const advanceId = advance.advanceId as string
  const lenderOwed = BigInt(advance.lenderOwedAtomic)
  const stranger = await fundedAccount(h.devnet, h.network, usdc(20))
  const strangerChain = new ChainAgent(h.network, stranger)
  const strangerClient = await signedIn(h.url, stranger)
  const read = async (): Promise<Json> => (await new CreditClient(h.url).get(`/credit/advances/${advanceId}`)).body
  const onChainOwed = async () =>
    (await strangerChain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey] })).lenderOwed
  const follower = () => h.app.service.followers.get(h.network.slug)?.status()

  // 5 repaid and reported at once (cost: 5 USDC, which the reorganisation gives back, and gas).
  const vanishing = await strangerChain.repay(advance.advanceKey, USDC, usdc(5))
  const reported = await strangerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: vanishing })
  const repaidIn = (await strangerChain.publicClient.getTransactionReceipt({ hash: vanishing })).blockNumber
  const depth = Number((await strangerChain.publicClient.getBlockNumber({ cacheTime: 0 })) - repaidIn) + 1
  const followerBlock = follower()?.cursor?.blockNumber
  const reorg = await fetch(h.network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_reorg', params: [depth, []] }) })
  console.log(`report ${reported.status}; repaid in block ${repaidIn}; follower at ${followerBlock} when the node reorganised ${depth} block(s): ${JSON.stringify(await reorg.json())}`)
  if (reported.status !== 200 || followerBlock === undefined || followerBlock >= repaidIn) throw new Error('setup: the follower read the block before the reorganisation (run again)')
  console.log(`contract owes the lender ${await onChainOwed()} (all of it again: ${lenderOwed})`)
  // The new history: 7 repaid.
  await fund(h.devnet, h.network, stranger.address, usdc(20))
  const other = await strangerChain.repay(advance.advanceKey, USDC, usdc(7))
  const otherIn = (await strangerChain.publicClient.getTransactionReceipt({ hash: other })).blockNumber
  await until(() => follower()?.state === 'stopped' || (follower()?.cursor?.blockNumber ?? 0n) >= otherIn, 30_000, 'the follower stopped or passed the new repayment')
  const counted = await read()
  console.log(`follower ${follower()?.state} at ${follower()?.cursor?.blockNumber}; the service: lenderOwed ${counted.lenderOwedAtomic}, repayments ${JSON.stringify(counted.repayments?.map((r: Json) => r.txHash))}; the contract: ${await onChainOwed()}`)
  holds = follower()?.state !== 'stopped'
  if (holds) {
    const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
    const later = await strangerChain.repay(advance.advanceKey, USDC, usdc(1))
    const rep = await strangerClient.post(`/credit/advances/${advanceId}/repay`, { txHash: later })
    console.log(`a later repayment of 1 reported: ${rep.status} ${rep.body?.code}`)
    const done = await operator.post(`/credit/jobs/${jobId}/complete`, {})
    console.log(`the job's completion: ${done.status} ${done.body?.code}`)
    const run = await operator.post('/operator/reconcile', { network: h.network.slug })
    console.log(`reconcile: ${JSON.stringify(run.body?.networks?.[0]?.differences)}`)
    console.log('FINDING: the follower goes on over a history without a repayment the service counted')
  } else console.log('holds no more: the follower stopped')
} finally {
  await h.stop()
  await devnet.stop()
}
process.exit(holds ? 1 : 0)
