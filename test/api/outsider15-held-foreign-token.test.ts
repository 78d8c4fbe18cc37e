// An outsider's probe (outsider15): a stranger's job in a token of its own (fundJob takes any address as the asset), a
// USDC-like token whose owner blacklists the job's client, then reclaims: the refund is refused by the token and held
// (PaymentHeld on a token the service does not know, for up to 2^256-1). The service's held-payment views, /health and
// reconciliation must not take that token for one of the network's, nor fail on the amount.
import t from 'tap'
import { createTestClient, createWalletClient, getAddress, http, maxUint256, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, loadArtifact, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedAccount, signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { expectReconciled, until } from './fixtures/api.ts'

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
  await mined(await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [jobKey(jobId), token, amount, stranger.address] }))
  await createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' }).increaseTime({ seconds: Number(devnetReclaimDelaySeconds) + 60 })
  await mined(await wallet.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'blacklist', args: [stranger.address] }))
  const reclaim = await mined(await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimJob', args: [jobKey(jobId)] }))
  const held = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, stranger.address] })
  t.equal(held, amount, 'the whole refund is held for the blacklisted client')
  await until(() => BigInt(h.app.service.followerHealth(h.network.slug).block ?? -1) >= reclaim.blockNumber, 20_000, 'the follower to pass the reclaim')

  // The view tells the truth (heldFor, on a token the network does not have: no asset symbol); nothing else counts it.
  const client = await signedIn(h.url, stranger)
  const view = await client.get(`/credit/held-payments/${stranger.address}`)
  t.equal(view.status, 200)
  t.same(view.body.map((r: { token: string; asset: string | null; amountAtomic: string }) => [r.token, r.asset, r.amountAtomic]), [[token, null, amount.toString()]], 'its own view shows the held refund as the contract holds it')
  const lower = await client.get(`/credit/held-payments/${stranger.address.toLowerCase()}`)
  t.same([lower.status, lower.body], [view.status, view.body], 'the same answer for the address in lower case')
  const health = (await client.get('/health')).body
  t.equal(health.status, 'ok', '/health is not degraded by it')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reconcile = (await operator.post('/operator/reconcile', { network: h.network.slug })).body.networks[0]
  t.same([reconcile.heldPayments, reconcile.unaccountedTokens], [[], []], 'reconciliation counts the network\'s tokens only')
  await expectReconciled(t, operator, h.network.slug)
})
