// reorg39: a receipt and the head read in parallel may come from two nodes of a load-balanced RPC. A receipt of a side
// branch (its node saw another block at that height) passed "confirmations" counted on the other node's head, and the
// report counted a fact the chain does not hold. Now the canonical block at the receipt's height, read after the head
// (the read that gives the block's time, no extra one), must have the receipt's blockHash; otherwise the proof is not
// confirmed yet (too_few_confirmations: send it again later). The proxy answers the receipt as such a node would.
import t from 'tap'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { legacyJobKey as jobKeyOf } from '../../src/chain/ids.ts'
import { readFacilityReceipt } from '../../src/chain/proofs-v2.ts'
import { setupFacilityV2, USDC } from './fixtures/facility-v2.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'

t.test('a receipt of a side branch is not confirmed, whatever the head', async (t) => {
  const f = await setupFacilityV2(t)
  const proxy = await startRpcProxy(f.network.rpcUrl)
  t.teardown(() => proxy.close())
  const clients = createNetworkClients({ ...f.network, rpcUrl: proxy.url })
  const client = await f.wallet(10n * USDC)
  const fund = await f.call(client, 'fundJob', [jobKeyOf('job_side_branch'), f.token, 10n * USDC, client.account.address])
  await f.testClient.mine({ blocks: 3 })
  const canonical = (await f.publicClient.getTransactionReceipt({ hash: fund })).blockHash
  const side = `0x${'5e'.repeat(32)}`
  // Only the receipt's answer (the one with cumulativeGasUsed) is of the side branch's node; the head and blocks are not.
  proxy.setRewrite((text) => (text.includes('"cumulativeGasUsed"') ? text.split(canonical).join(side) : text))
  proxy.reset()
  const read = await readFacilityReceipt(clients, f.facility, { txHash: fund, confirmations: 2 })
  t.match(read, { ok: false, reason: 'too_few_confirmations', detail: /not the chain's block/ }, 'refused as not yet confirmed')
  t.equal(proxy.count('eth_getBlockByNumber'), 1, 'the canonical block at its height read once')

  proxy.setRewrite(undefined)
  proxy.reset()
  const again = await readFacilityReceipt(clients, f.facility, { txHash: fund, confirmations: 2 })
  t.ok(again.ok && again.value.facts.some((fact) => fact.name === 'JobFunded'), 'the same receipt from the chain\'s own branch proves the fact')
  t.same(proxy.counts(), { eth_getTransactionReceipt: 1, eth_blockNumber: 1, eth_getBlockByNumber: 1 }, 'three reads, as before: the block read gives its time as well')
})
