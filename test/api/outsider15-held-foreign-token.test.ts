// An outsider's probe (outsider15): a stranger's job in a token of its own (fundJob takes any address as the asset), a
// USDC-like token whose owner blacklists the job's client, then reclaims: the refund is refused by the token and held
// (PaymentHeld on a token the service does not know, for up to 2^256-1). The service does not follow it (no record, no
// view: a record per token and recipient was anyone's to add), and /health and reconciliation must not take that token
// for one of the network's, nor fail on the amount.
import t from 'tap'
import { createWalletClient, getAddress, http, maxUint256, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, loadArtifact, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { expectReconciled, until } from './fixtures/api.ts'
import { pastReclaimDelay } from './fixtures/reclaim.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('a refund held in a stranger\'s own token is nobody\'s business of the service', async (t) => {
  const stranger = await fundedAccount(h.devnet, h.network, 0n)
  const agent = new ChainAgent(h.network, stranger)
  const wallet = createWalletClient({ account: stranger, chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const mined = async (hash: `0x${string}`) => {
    const receipt = await agent.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    t.equal(receipt.status, 'success')
    return receipt
  }
  const deployed = await mined(await wallet.deployContract({ abi: testStablecoinAbi, bytecode: loadArtifact('TestStablecoin').bytecode, args: ['USD Coin', 'USDC', '2', stranger.address] }))
  const token = getAddress(deployed.contractAddress as Address)
  const amount = maxUint256
  await mined(await wallet.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'mint', args: [stranger.address, amount] }))
  await mined(await wallet.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'approve', args: [h.network.creditContract, amount] }))
  const jobId = 'job_o15_foreign_token'
  await mined(await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [jobKey(h.network, jobId), token, amount, stranger.address] }))
  await pastReclaimDelay(h.network, 60)
  await mined(await wallet.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'blacklist', args: [stranger.address] }))
  const reclaim = await mined(await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey(h.network, jobId)] }))
  const held = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, stranger.address] })
  t.equal(held, amount, 'the whole refund is held for the blacklisted client')
  await until(() => BigInt(h.app.service.followerHealth(h.network.slug).block ?? -1) >= reclaim.blockNumber, 20_000, 'the follower to pass the reclaim')

  // Not followed: no record, no view (heldFor on chain tells anyone who asks); nothing else counts it. Before, the
  // follower kept a record per token and recipient of any token, which anyone could add at the price of a funding and
  // a reclaim, and the view showed it with asset null.
  const client = await signedIn(h.url, stranger)
  const view = await client.get(`/credit/held-payments/${stranger.address}`)
  t.equal(view.status, 200)
  t.same(view.body, [], 'the service keeps nothing of a token the network does not list')
  t.equal([...h.app.service.store.iterateKind('held')].length, 0, 'and the store holds no record of it')
  const health = (await client.get('/health')).body
  t.equal(health.status, 'ok', '/health is not degraded by it')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reconcile = (await operator.post('/operator/reconcile', { network: h.network.slug })).body.networks[0]
  t.same([reconcile.heldPayments, reconcile.unaccountedTokens], [[], []], 'reconciliation counts the network\'s tokens only')
  await expectReconciled(t, operator, h.network.slug)
})
