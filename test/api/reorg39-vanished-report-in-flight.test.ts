// reorg39: a report's proof read from a receipt before the chain follower reached its block (noted in reportedAhead),
// then the block taken back and the follower past it, all while the report had not committed yet (its proof not used,
// so the follower, rightly, did not stop on it). Before, the follower dropped the note unchecked and the report then
// committed a repayment the chain no longer holds, never checked. Now the follower remembers the fact as vanished and
// useProof refuses it (ProofRefusedError too_few_confirmations, nothing recorded: the report may be sent again).
// The report is held between its proof and its command by calling the service's two steps directly.
import t from 'tap'
import { startDevnet } from '../../src/chain/devnet.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { ProofRefusedError } from '../../src/chain/proofs.ts'
import { fundedAccount, fundedJob, USDC, usdc } from '../fixtures/service.ts'
import { fundAdvance, until, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

t.test('a report proved before a reorganisation and used after the follower passed its block is refused', async (t) => {
  // The follower polls every 4 s: the proof is read before it reads the block.
  const devnet = await startDevnet({ pollingIntervalMs: 4000 })
  t.teardown(() => devnet.stop())
  const { h, lender } = await lenderHarness(t, { devnet }, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const jobId = 'job_r39_in_flight'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(10) })
  const service = h.app.service
  const stranger = await fundedAccount(h.devnet, h.network, usdc(20))
  const strangerChain = new ChainAgent(h.network, stranger)
  const follower = () => service.followers.get(h.network.slug)?.status()

  const vanishing = await strangerChain.repay(advance.advanceKey, USDC, usdc(5))
  const fact = await service.prove(h.network.slug, stranger.address, 'r39', 'Repaid', vanishing, { offerKey: advance.advanceKey })
  const followerBlock = follower()?.cursor?.blockNumber
  t.ok(followerBlock !== undefined && followerBlock < fact.blockNumber, `the follower (at ${followerBlock}) had not read block ${fact.blockNumber}`)
  t.ok(service.reportedAhead.get(h.network.slug)?.has(fact.proofKey), 'the fact is noted for the follower')
  const depth = Number((await strangerChain.publicClient.getBlockNumber({ cacheTime: 0 })) - fact.blockNumber) + 1
  const reorg = await fetch(h.network.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_reorg', params: [depth, []] }) })
  t.notOk(((await reorg.json()) as Json)['error'], 'anvil reorganised its last blocks')
  const head = await strangerChain.publicClient.getBlockNumber({ cacheTime: 0 })
  await until(() => (follower()?.cursor?.blockNumber ?? 0n) >= head || follower()?.state === 'stopped', 30_000, 'the follower passed the reported height')
  t.equal(follower()?.state, 'ok', 'an unused fact stops nothing')
  t.notOk(service.reportedAhead.get(h.network.slug)?.has(fact.proofKey), 'the note is gone')

  // The report's command now: its proof is refused, nothing recorded.
  t.throws(() => service.useProof(fact, `advance:${advance.advanceId as string}`), ProofRefusedError, 'the vanished fact is refused')
  t.match(captured(() => service.useProof(fact, 'x')), { reason: 'too_few_confirmations', message: /no longer holds it/ }, 'as not confirmed, saying why')
  t.notOk(service.store.proofs.has(fact.proofKey), 'nothing recorded')
  // The same transaction mined again in another block is a fact of that block, not refused.
  const elsewhere = { ...fact, blockNumber: fact.blockNumber + 1n }
  t.doesNotThrow(() => service.useProof(elsewhere, 'x'), 'the same key at another block is not refused')
})

function captured(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return undefined
}
