// src/reputation against the devnet's ERC-8004 registries: who controls an agent (agent wallet, owner, operator;
// nobody else, and not after a transfer), and the initial reputation from trusted, unrevoked feedback.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createTestClient, http, type Address } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { UnknownNetworkError } from '../../src/chain/config.ts'
import { AgentLinkError, ReputationReader, reputationDefaults, reputationFromFeedback, type AgentRef } from '../../src/reputation/index.ts'
import { setupDevnet } from '../chain/fixtures/devnet.ts'
import { registries } from './fixtures/erc8004.ts'

const f = await setupDevnet(t)
const reg = registries(f.network)
const testClient = createTestClient({ chain: networkChain(f.network), transport: http(f.network.rpcUrl), mode: 'anvil' })
const fresh = async () => {
  const account = privateKeyToAccount(generatePrivateKey())
  await testClient.setBalance({ address: account.address, value: 10n ** 19n })
  return account
}
const [owner, agentWallet, operator, stranger, buyer, trustedA, trustedB, untrusted] = [await fresh(), await fresh(), await fresh(), await fresh(), await fresh(), await fresh(), await fresh(), await fresh()]
const reader = (trustedClients: Address[], extra: Partial<typeof reputationDefaults> = {}) =>
  new ReputationReader({ ...reputationDefaults, trustedClients, ...extra }, (slug) => {
    if (slug !== f.network.slug) throw new UnknownNetworkError(slug)
    return f.clients
  })

t.test('identity: agent wallet, owner and operator are accepted; a stranger, and everyone after a transfer, refused', async (t) => {
  const agentId = await reg.register(owner)
  const agent: AgentRef = { network: f.network.slug, registry: f.network.identityRegistry, agentId }
  const r = reader([])
  t.equal(await r.roleOf(agent, owner.address), 'agent_wallet', 'the registrant is the agent wallet')
  await reg.setAgentWallet(owner, agentId, agentWallet)
  await reg.approveOperator(owner, operator.address)
  t.equal(await r.roleOf(agent, agentWallet.address), 'agent_wallet')
  t.equal(await r.roleOf(agent, owner.address), 'owner')
  t.equal(await r.roleOf(agent, operator.address), 'operator')
  t.equal(await r.roleOf(agent, stranger.address), null)
  await t.rejects(r.evidenceFor(agent, stranger.address, Date.now()), { name: 'AgentLinkError', code: 'agent_not_controlled' })

  await reg.transfer(owner, agentId, buyer.address)
  for (const [who, account] of [['old owner', owner], ['old agent wallet', agentWallet], ['old owner\'s operator', operator]] as const) {
    t.equal(await r.roleOf(agent, account.address), null, `${who} no longer counts after the transfer`)
  }
  t.equal(await r.roleOf(agent, buyer.address), 'owner', 'the new owner does')

  await t.rejects(r.roleOf({ ...agent, agentId: 999n }, owner.address), { code: 'agent_not_found' }, 'no such token')
  const other = { ...agent, registry: f.network.reputationRegistry }
  await t.rejects(r.roleOf(other, owner.address), AgentLinkError, 'a registry other than the configured one')
  await t.rejects(r.roleOf(other, owner.address), { code: 'agent_registry_unknown' })
  await t.rejects(r.roleOf({ ...agent, network: 'nowhere' }, owner.address), { name: 'UnknownNetworkError' })
})

t.test('initial reputation: the formula over trusted, unrevoked feedback only', async (t) => {
  const agentId = await reg.register(owner)
  const agent: AgentRef = { network: f.network.slug, registry: f.network.identityRegistry, agentId }
  await reg.giveFeedback(trustedA, agentId, 80n)
  await reg.giveFeedback(trustedA, agentId, 955n, 1)
  await reg.giveFeedback(trustedB, agentId, 0n)
  await reg.revokeFeedback(trustedB, agentId, 1n)
  await reg.giveFeedback(untrusted, agentId, 0n)
  await reg.giveFeedback(untrusted, agentId, 0n)

  const r = reader([trustedA.address, trustedB.address])
  const evidence = await r.evidenceFor(agent, owner.address, Date.now())
  t.equal(evidence.feedbackCount, 2, 'the revoked and the untrusted feedback are not read')
  // (5 x 5000 + 8000 + 9550) / 7
  t.equal(evidence.reputationBps, 6078)
  t.equal(evidence.reputationBps, reputationFromFeedback([{ value: 80n, valueDecimals: 0 }, { value: 955n, valueDecimals: 1 }]))
  t.equal((await reader([]).evidenceFor(agent, owner.address, Date.now())).reputationBps, 5000, 'no trusted client: the neutral prior')
  t.equal((await reader([untrusted.address]).evidenceFor(agent, owner.address, Date.now())).reputationBps, 3571, 'had the untrusted client counted: (5 x 5000 + 0 + 0) / 7')

  // Decay: one half-life after the feedback's blocks (and less than two), each weighs half.
  const head = await f.clients.publicClient.getBlock()
  const halfLifeSeconds = 3600
  const decayed = await reader([trustedA.address, trustedB.address], { halfLifeSeconds }).evidenceFor(agent, owner.address, (Number(head.timestamp) + halfLifeSeconds) * 1000)
  // (5e6 x 5000 + 5e5 x 8000 + 5e5 x 9550) / 6e6
  t.equal(decayed.reputationBps, 5629)
  const unseen = await reader([trustedA.address], { halfLifeSeconds, feedbackFromBlock: head.number + 1n }).evidenceFor(agent, owner.address, Number(head.timestamp) * 1000)
  t.equal(unseen.reputationBps, 5000, 'feedback whose log is before the scanned range has no age to show and weighs nothing')
})
