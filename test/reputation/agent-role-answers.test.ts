// agentRoleOf reads the identity registry's ownerOf, getAgentWallet and isAuthorizedOrOwner: ownerOf reverts for a
// token that does not exist, which is AgentLinkError agent_not_found (a 4xx to the caller). viem reads an RPC error
// coded -32603 (internal error, a provider's own failure) as a contract revert whatever its message, so a provider's
// outage answered "this agent does not exist" (review30 found the same misreading in the chain probes). Now only the
// registry's own answer is agent_not_found; anything else is a ChainRpcError (503, retried).
import t from 'tap'
import { createPublicClient, custom } from 'viem'
import { foundry } from 'viem/chains'
import { ChainRpcError } from '../../src/chain/proofs.ts'
import { agentRoleOf, AgentLinkError, type AgentRef } from '../../src/reputation/index.ts'

const registry = '0x00000000000000000000000000000000000000a8'
const agent: AgentRef = { network: 'net', registry, agentId: 7n }
const wallet = '0x00000000000000000000000000000000000000b1'
const node = (call: () => unknown) =>
  createPublicClient({
    chain: foundry,
    transport: custom({
      async request({ method }) {
        if (method === 'eth_call') return call()
        throw new Error(`unexpected ${method}`)
      },
    }, { retryCount: 0 }),
  })
const rpcError = (code: number, message: string, data?: string) => () => {
  throw Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) })
}
const outcomeOf = (call: () => unknown) =>
  agentRoleOf(node(call), 'net', agent, wallet).then(
    (role) => role,
    (error: unknown) => (error instanceof AgentLinkError ? error.code : error instanceof ChainRpcError ? 'rpc' : `other: ${String(error)}`),
  )

t.test('the registry\'s revert is agent_not_found; a provider\'s internal error is an RPC failure', async (t) => {
  // ERC721NonexistentToken(uint256), the registry's revert for a token that does not exist.
  t.equal(await outcomeOf(rpcError(3, 'execution reverted', '0x7e27328900000000000000000000000000000000000000000000000000000000000007')), 'agent_not_found')
  t.equal(await outcomeOf(rpcError(-32000, 'execution reverted')), 'agent_not_found', 'geth\'s revert without data')
  t.equal(await outcomeOf(rpcError(-32603, 'Internal error')), 'rpc', 'before: agent_not_found')
  t.equal(await outcomeOf(rpcError(-32005, 'limit exceeded')), 'rpc')
})
