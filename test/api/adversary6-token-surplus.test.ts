// An adversary's finding: a stranger with a fresh wallet and one unit of the asset sent it straight to the credit
// contract (a plain ERC-20 transfer, outside the contract's functions). The reconciliation's token-conservation check
// found the contract holding one unit more than its jobs and reserve, counted it a difference, and /health said
// `degraded`, at the next start-up and every one after: nothing can take a token out of the contract again, so one
// unit bought a service that reads unhealthy for good (and a monitor that learns to ignore it). A surplus is owed to
// nobody: it is now listed apart (`unaccountedTokens`) and /health stays ok; the contract holding less than it
// accounts for stays a difference. Nor does a job a stranger funds in a "token" of its own (the contract takes any
// address) whose balanceOf reverts (every run failed, chain_unavailable) or answers 1 (a shortfall). Real service, real devnet.
import t from 'tap'
import { createTestClient, createWalletClient, getAddress, http, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { splitSurplus } from '../../src/service/reconciliation.ts'
import { fundedAccount, signedIn, startHarness, USDC, type Harness } from '../fixtures/service.ts'
import { documentedHealth, expectDocumented, openApiDocument, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
t.before(async () => {
  h = await startHarness()
  doc = await openApiDocument(h.url)
})
t.teardown(async () => {
  await h.stop()
})

const health = (): Promise<Json> => documentedHealth(t, h.url, doc)

const mine = (body: Json): Json => body.networks.find((n: Json) => n.network === h.network.slug)

t.test('one unit a stranger sends to the contract is listed apart, on demand and at every start-up; /health stays ok', async (t) => {
  await h.app.startupReconciliation
  t.equal((await health()).status, 'ok', 'healthy before')
  const stranger = await fundedAccount(h.devnet, h.network, 1n)
  await new ChainAgent(h.network, stranger).transferToken(USDC, h.network.creditContract, 1n)
  const token = getAddress(h.network.tokens.find((token) => token.symbol === USDC)!.address)

  let operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.equal(reply.status, 200, JSON.stringify(reply.body))
  expectDocumented(t, doc, 'post', '/operator/reconcile', reply)
  t.equal(reply.body.status, 'ok', JSON.stringify(reply.body))
  t.same(reply.body.networks[0].differences, [], 'a surplus is no difference')
  t.same(reply.body.networks[0].unaccountedTokens, [{ asset: token, amountAtomic: '1' }], 'it is listed apart, to the unit')
  const after = await health()
  t.equal(after.status, 'ok', '/health is not degraded by it')
  t.same(mine(after).reconciliation.unaccountedTokens, [{ asset: token, amountAtomic: '1' }], '/health lists it')

  await h.restart()
  await h.app.startupReconciliation
  const restarted = await health()
  t.equal(restarted.status, 'ok', 'nor at the next start-up')
  t.equal(mine(restarted).reconciliation.status, 'ok')
  t.same(mine(restarted).reconciliation.unaccountedTokens, [{ asset: token, amountAtomic: '1' }])
  operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  t.equal((await operator.post('/operator/reconcile', {})).body.status, 'ok')
})

/**
 * A token of the stranger's own at a fresh address: `code` answers every call. The contract takes any address as a
 * job's asset, so a stranger escrows "tokens" that never moved.
 */
async function strangersToken(code: Hex): Promise<Address> {
  const token = privateKeyToAddress(generatePrivateKey())
  await createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' }).setCode({ address: token, bytecode: code })
  return token
}

/** Returns uint256 1 to every call: transferFrom "succeeds", balanceOf(contract) is 1 whatever was escrowed. */
const ANSWERS_ONE = '0x600160005260206000f3' as const
/** The same, except that balanceOf (0x70a08231) reverts. */
const BALANCE_REVERTS = '0x60003560e01c6370a0823114601957600160005260206000f35b600080fd' as const

t.test('a job a stranger funds in a token of its own is no difference, and cannot blind the check', async (t) => {
  const stranger = await fundedAccount(h.devnet, h.network, 0n)
  const wallet = createWalletClient({ account: stranger, chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const agent = new ChainAgent(h.network, stranger)
  for (const [jobId, code] of [['job_lying_token', ANSWERS_ONE], ['job_reverting_token', BALANCE_REVERTS]] as const) {
    const token = await strangersToken(code)
    const hash = await wallet.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'fundJob', args: [jobKey(h.network, jobId), token, 100n, stranger.address] })
    t.equal((await agent.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success', `${jobId}: escrowed on chain`)
  }
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.equal(reply.status, 200, JSON.stringify(reply.body))
  t.equal(reply.body.status, 'ok', JSON.stringify(reply.body))
  t.same(reply.body.networks[0].differences, [])
  t.equal((await health()).status, 'ok')
})

t.test('the contract holding less than its jobs and reserve stays a difference', async (t) => {
  // A shortfall cannot be planted on chain (the contract sends only what it accounts for), so the split is checked on
  // the differences compareStates names.
  const asset = getAddress(h.network.creditContract)
  const conservation = (expected: string, actual: string) => ({ network: h.network.slug, asset, kind: 'token_conservation' as const, key: asset, expected, actual })
  const total = { network: h.network.slug, asset, kind: 'total' as const, key: 'escrowFundedAtomic', expected: '5', actual: '7' }
  t.same(splitSurplus([conservation('10', '9'), total]), { differences: [conservation('10', '9'), total], unaccountedTokens: [] })
  t.same(splitSurplus([conservation('10', '13'), total]), { differences: [total], unaccountedTokens: [{ asset, amountAtomic: 3n }] })
})
