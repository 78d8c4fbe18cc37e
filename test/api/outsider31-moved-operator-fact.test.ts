// review38: an operator transaction's fact that moved to another block is not a reorganisation deeper than the
// confirmations. operatorSend notes the receipt waitForTransactionReceipt returns, and viem keeps the FIRST receipt it
// read while it waits for the confirmations: a block taken back meanwhile (shallower than the confirmations: a
// one-block reorganisation, common on Ethereum) and the transaction mined again in a later block leave the note naming
// the old block and the old log index. The follower's batch over that block then lacks the fact, and outsider31's check
// stopped the network (chain_replaced) for a settlement that is on chain. Now such a fact (the operator's own, `sent`)
// is looked up by its transaction: the same event with the same arguments mined in the batch's blocks or past them is
// not vanished (checked again at its new block); a fact its transaction no longer holds, or holds with other arguments,
// still stops the follower. A report's fact (read at its confirmations, never stale so) still stops it at once.
// Fails without the look-up in refuseVanishedReports (src/service/chain-observation.ts): the first two cases throw.
import t from 'tap'
import { refuseVanishedReports } from '../../src/service/chain-observation.ts'
import { readFacilityReceipt } from '../../src/chain/proofs-v2.ts'
import { proofKey, type FacilityFact } from '../../src/chain/events-v2.ts'
import { FollowerFatalError, type ChainBatch } from '../../src/chain/follower.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, startHarness, USDC, usdc } from '../fixtures/service.ts'

t.test('an operator fact mined again in a later block is checked there, not taken for a vanished one', async (t) => {
  const h = await startHarness()
  t.teardown(() => h.stop())
  const service = h.app.service
  const slug = h.network.slug
  // The follower is stopped (not fatal): this test plays its batches itself.
  await service.followers.get(slug)?.stop()
  const payer = await fundedAccount(h.devnet, h.network, usdc(10))
  const txHash = await new ChainAgent(h.network, payer).fundJob('job_r38_moved', USDC, usdc(10), payer.address)
  const read = await readFacilityReceipt(service.clientsOf(slug), h.network.creditContract, { txHash })
  if (!read.ok) throw new Error(read.detail)
  const minedIn = read.value.blockNumber
  const fact = read.value.facts[0] as FacilityFact
  // The receipt first read: the same transaction in the block before, at another log index.
  const staleLogIndex = fact.logIndex + 7
  const stale: FacilityFact = { ...fact, logIndex: staleLogIndex, proofKey: proofKey(slug, txHash, staleLogIndex) }
  const noteStale = (of: FacilityFact = stale) => {
    service.reportedAhead.set(slug, new Map([[of.proofKey, { blockNumber: minedIn - 1n, sent: true, fact: of }]]))
  }
  const batch = (toBlock: bigint, events: FacilityFact[]): ChainBatch => ({ network: slug, fromBlock: minedIn - 1n, toBlock, toBlockHash: '0x00', toBlockTimeMs: 0, events })
  service.appliedChainBlocks.set(slug, minedIn - 2n)

  noteStale()
  await refuseVanishedReports(service, batch(minedIn - 1n, []), [])
  t.same([...(service.reportedAhead.get(slug) ?? new Map())], [[fact.proofKey, { blockNumber: minedIn, sent: true, fact }]], 'checked again at the block it is mined in now, under its key there')
  await refuseVanishedReports(service, batch(minedIn, [fact]), [fact])
  t.equal(service.reportedAhead.get(slug)?.size, 0, 'and found there')

  noteStale()
  await refuseVanishedReports(service, batch(minedIn, [fact]), [fact])
  t.equal(service.reportedAhead.get(slug)?.size, 0, 'mined again within the batch: found in it')

  noteStale({ ...stale, args: { ...stale.args, amount: (stale.args as { amount: bigint }).amount + 1n } } as FacilityFact)
  await t.rejects(refuseVanishedReports(service, batch(minedIn, [fact]), [fact]), FollowerFatalError, 'the transaction now holds the event with other arguments: stopped')

  noteStale({ ...stale, txHash: `0x${'ab'.repeat(32)}`, proofKey: proofKey(slug, `0x${'ab'.repeat(32)}`, 0) })
  await t.rejects(refuseVanishedReports(service, batch(minedIn, [fact]), [fact]), FollowerFatalError, 'a transaction no longer mined: stopped')

  service.reportedAhead.set(slug, new Map([[stale.proofKey, { blockNumber: minedIn - 1n, sent: false, fact: stale }]]))
  await service.store.commit({ records: [service.store.proofs.addOp(stale.proofKey, { usedBy: 'test', usedAtMs: 0 })] })
  await t.rejects(refuseVanishedReports(service, batch(minedIn, [fact]), [fact]), FollowerFatalError, 'a report\'s fact (its proof used) is not looked for elsewhere: stopped')
})
