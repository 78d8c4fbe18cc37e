// The devnet's minimal ERC-8004 registries: the current function signatures (shared/notes/erc8004.md) and the
// behaviour the service relies on (agent wallet, authorization, feedback summary from chosen clients).
import t from 'tap'
import { parseAbi, type Address, type Hex } from 'viem'
import { identityRegistryAbi, reputationRegistryAbi } from '../../src/chain/artifacts.ts'
import { rejectsWith, setupDevnet } from './fixtures/devnet.ts'
import { toContractRevert } from '../../src/chain/operator.ts'

type AbiShapeItem = { type: string; name?: string; inputs?: readonly { type: string; indexed?: boolean }[]; outputs?: readonly { type: string }[] }
const shape = (item: AbiShapeItem): string =>
  JSON.stringify([
    item.type,
    item.name,
    (item.inputs ?? []).map((i) => [i.type, i.indexed === true]),
    item.type === 'function' ? (item.outputs ?? []).map((o) => o.type) : [],
  ])

t.test('registries expose the current ERC-8004 signatures', async (t) => {
  const identity = new Set(identityRegistryAbi.map((item) => shape(item as AbiShapeItem)))
  for (const item of parseAbi([
    'function register() returns (uint256)',
    'function register(string agentURI) returns (uint256)',
    'function register(string agentURI, (string metadataKey, bytes metadataValue)[] metadata) returns (uint256)',
    'function getAgentWallet(uint256 agentId) view returns (address)',
    'function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes signature)',
    'function getMetadata(uint256 agentId, string metadataKey) view returns (bytes)',
    'function setMetadata(uint256 agentId, string metadataKey, bytes metadataValue)',
    'function isAuthorizedOrOwner(address spender, uint256 agentId) view returns (bool)',
    'function ownerOf(uint256 tokenId) view returns (address)',
    'function tokenURI(uint256 tokenId) view returns (string)',
    'event Registered(uint256 indexed agentId, string agentURI, address indexed owner)',
    'event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue)',
    'event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy)',
  ])) {
    t.ok(identity.has(shape(item as AbiShapeItem)), `identity: ${item.type} ${'name' in item ? item.name : ''}`)
  }
  const reputation = new Set(reputationRegistryAbi.map((item) => shape(item as AbiShapeItem)))
  for (const item of parseAbi([
    'function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
    'function getSummary(uint256 agentId, address[] clientAddresses, string tag1, string tag2) view returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)',
    'function readAllFeedback(uint256 agentId, address[] clientAddresses, string tag1, string tag2, bool includeRevoked) view returns (address[], uint64[], int128[], uint8[], string[], string[], bool[])',
    'function getClients(uint256 agentId) view returns (address[])',
    'function revokeFeedback(uint256 agentId, uint64 feedbackIndex)',
    'function appendResponse(uint256 agentId, address clientAddress, uint64 feedbackIndex, string responseURI, bytes32 responseHash)',
    'function getLastIndex(uint256 agentId, address clientAddress) view returns (uint64)',
    'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
  ])) {
    t.ok(reputation.has(shape(item as AbiShapeItem)), `reputation: ${item.type} ${'name' in item ? item.name : ''}`)
  }
})

t.test('identity and reputation on the devnet', async (t) => {
  const f = await setupDevnet(t)
  const { network, accounts } = f
  const { publicClient } = f.clients
  const lender = f.actor('lender')
  const client = f.actor('jobClient')
  const other = f.actor('supplier')
  const identity = network.identityRegistry
  const reputation = network.reputationRegistry

  const write = async (who: typeof lender, address: Address, abi: typeof identityRegistryAbi | typeof reputationRegistryAbi, functionName: string, args: readonly unknown[]): Promise<Hex> => {
    let request
    try {
      ;({ request } = await publicClient.simulateContract({ account: who.account, address, abi, functionName, args } as Parameters<typeof publicClient.simulateContract>[0]))
    } catch (error) {
      throw toContractRevert(network.slug, error)
    }
    const hash = await who.wallet.writeContract(request as Parameters<typeof who.wallet.writeContract>[0])
    await f.waitSuccess(hash)
    return hash
  }
  const readIdentity = (functionName: string, args: readonly unknown[]) =>
    publicClient.readContract({ address: identity, abi: identityRegistryAbi, functionName, args } as Parameters<typeof publicClient.readContract>[0])
  const readReputation = (functionName: string, args: readonly unknown[]) =>
    publicClient.readContract({ address: reputation, abi: reputationRegistryAbi, functionName, args } as Parameters<typeof publicClient.readContract>[0])

  await write(lender, identity, identityRegistryAbi, 'register', ['https://lender.example/agent.json'])
  t.equal(await readIdentity('ownerOf', [0n]), accounts.lender.address, 'agent ids start at 0')
  t.equal(await readIdentity('tokenURI', [0n]), 'https://lender.example/agent.json')
  t.equal(await readIdentity('getAgentWallet', [0n]), accounts.lender.address, 'the agent wallet is the registrant')
  t.equal(await readIdentity('isAuthorizedOrOwner', [accounts.lender.address, 0n]), true)
  t.equal(await readIdentity('isAuthorizedOrOwner', [accounts.supplier.address, 0n]), false)

  // A new wallet proves control with an EIP-712 signature.
  const block = await publicClient.getBlock()
  const deadline = block.timestamp + 120n
  const signature = await other.wallet.signTypedData({
    domain: { name: 'ERC8004IdentityRegistry', version: '1', chainId: network.chainId, verifyingContract: identity },
    types: { AgentWalletSet: [
      { name: 'agentId', type: 'uint256' },
      { name: 'newWallet', type: 'address' },
      { name: 'owner', type: 'address' },
      { name: 'deadline', type: 'uint256' },
    ] },
    primaryType: 'AgentWalletSet',
    message: { agentId: 0n, newWallet: accounts.supplier.address, owner: accounts.lender.address, deadline },
  })
  await rejectsWith(t, write(lender, identity, identityRegistryAbi, 'setAgentWallet', [0n, accounts.borrower.address, deadline, signature]), 'InvalidWalletSignature', 'signature of another wallet')
  await rejectsWith(t, write(other, identity, identityRegistryAbi, 'setAgentWallet', [0n, accounts.supplier.address, deadline, signature]), 'NotAuthorized', 'only the owner sets the wallet')
  await write(lender, identity, identityRegistryAbi, 'setAgentWallet', [0n, accounts.supplier.address, deadline, signature])
  t.equal(await readIdentity('getAgentWallet', [0n]), accounts.supplier.address, 'agent wallet changed with the new wallet signature')

  // Feedback: clients rate, the owner cannot rate its own agent, summaries are over chosen clients only.
  await rejectsWith(t, write(lender, reputation, reputationRegistryAbi, 'giveFeedback', [0n, 90n, 0, 'starred', '', '', '', `0x${'00'.repeat(32)}`]), 'SelfFeedback', 'no self-feedback')
  await rejectsWith(t, write(client, reputation, reputationRegistryAbi, 'giveFeedback', [7n, 90n, 0, 'starred', '', '', '', `0x${'00'.repeat(32)}`]), 'UnknownAgent', 'unknown agent')
  await write(client, reputation, reputationRegistryAbi, 'giveFeedback', [0n, 80n, 0, 'starred', '', '', '', `0x${'00'.repeat(32)}`])
  await write(client, reputation, reputationRegistryAbi, 'giveFeedback', [0n, 955n, 1, 'starred', '', '', '', `0x${'00'.repeat(32)}`])
  await write(f.actor('attester'), reputation, reputationRegistryAbi, 'giveFeedback', [0n, -100n, 0, 'uptime', '', '', '', `0x${'00'.repeat(32)}`])
  t.strictSame(await readReputation('getSummary', [0n, [accounts.jobClient.address], 'starred', '']), [2n, 877n, 1], 'mean of 80.0 and 95.5 at one decimal')
  t.strictSame(await readReputation('getSummary', [0n, [accounts.jobClient.address, accounts.attester.address], '', '']), [3n, 251n, 1])
  await rejectsWith(t, readReputation('getSummary', [0n, [], '', '']).catch((e: unknown) => { throw toContractRevert(network.slug, e) }), 'EmptyClientList', 'the reader must choose whom it trusts')
  t.strictSame(await readReputation('getClients', [0n]), [accounts.jobClient.address, accounts.attester.address])
  t.equal(await readReputation('getLastIndex', [0n, accounts.jobClient.address]), 2n)
  await write(client, reputation, reputationRegistryAbi, 'revokeFeedback', [0n, 1n])
  t.strictSame(await readReputation('getSummary', [0n, [accounts.jobClient.address], '', '']), [1n, 955n, 1], 'revoked feedback no longer counts')
  const all = (await readReputation('readAllFeedback', [0n, [], '', '', true])) as readonly unknown[]
  t.strictSame(all[2], [80n, 955n, -100n], 'values of every client, revoked included')
  t.strictSame(all[6], [true, false, false])
})
