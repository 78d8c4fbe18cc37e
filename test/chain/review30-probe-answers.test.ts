// review30 (after probe28): probeCreditContract's verdict 'older' stops a follower for good (older_contract) and
// refuses a start; the cap check rides on the same call (advancesPerJobMax()). viem reads an RPC error coded -32603
// (internal error, which providers answer for their own failures) as a contract revert whatever its message: a transient
// provider error read as an older contract. And a geth node answers a revert without data -32000 "execution reverted",
// which viem does not read as a revert: an older contract there was an outage, retried for ever. Now only the node's
// revert (with data, or saying it reverted) or empty data is the contract's answer; anything else is thrown (retried).
import t from 'tap'
import { createPublicClient, custom, encodeAbiParameters } from 'viem'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { tokenMismatches } from '../../src/chain/deployment-checks.ts'
import { probeCreditContract } from '../../src/chain/reclaim-window.ts'

/** A node holding code at the contract, whose eth_call answers `call` (a result, or an RPC error thrown). */
function node(call: () => unknown) {
  return createPublicClient({
    transport: custom({
      async request({ method }) {
        if (method === 'eth_blockNumber') return '0x10'
        if (method === 'eth_getCode') return '0x6080'
        if (method === 'eth_call') return call()
        throw new Error(`unexpected ${method}`)
      },
    }, { retryCount: 0 }),
  })
}
const rpcError = (code: number, message: string, data?: string) => () => {
  throw Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) })
}
const contract = '0x00000000000000000000000000000000000000c0'
const verdictOf = (call: () => unknown) => probeCreditContract(node(call), contract).then(({ verdict, advancesPerJobMax }) => ({ verdict, advancesPerJobMax }), () => 'thrown')

t.test('the contract\'s answers are verdicts; an RPC\'s own errors are thrown, to be retried', async (t) => {
  t.same(await verdictOf(() => encodeAbiParameters([{ type: 'uint256' }], [500n])), { verdict: 'current', advancesPerJobMax: 500n })
  t.same(await verdictOf(() => '0x'), { verdict: 'older', advancesPerJobMax: undefined }, 'no data: code without the function')
  t.same(await verdictOf(rpcError(3, 'execution reverted')), { verdict: 'older', advancesPerJobMax: undefined }, 'a revert (anvil, EIP-1474 code 3)')
  t.same(await verdictOf(rpcError(3, 'execution reverted', '0x08c379a0')), { verdict: 'older', advancesPerJobMax: undefined }, 'a revert with data')
  t.same(await verdictOf(rpcError(-32000, 'execution reverted')), { verdict: 'older', advancesPerJobMax: undefined }, 'geth\'s revert without data: before, thrown')
  t.equal(await verdictOf(rpcError(-32603, 'Internal error')), 'thrown', 'a provider\'s internal error: before, older')
  t.equal(await verdictOf(rpcError(-32000, 'header not found')), 'thrown', 'a node behind')
  t.equal(await verdictOf(rpcError(-32005, 'limit exceeded')), 'thrown', 'a rate limit')
})

// The start-up's and the follower's token check reads decimals() the same way: a provider's internal error there read
// "no decimals(): not the token", which stops the follower for good (token_mismatch) or refuses the start.
t.test('a token\'s decimals() met by an RPC\'s internal error is thrown, not a mismatch', async (t) => {
  const network = {
    slug: 'net', chainId: 1,
    tokens: [{ symbol: 'USDC', address: '0x00000000000000000000000000000000000000d0', decimals: 6, eip712Name: 'USD Coin', eip712Version: '2' }],
  } as unknown as NetworkConfig
  const mismatchesOf = (call: () => unknown) => tokenMismatches(node(call), network, 16n).then((found) => found.map(({ field }) => field), () => 'thrown')
  t.equal(await mismatchesOf(rpcError(-32603, 'Internal error')), 'thrown', 'before: tokens/0/address, "not the USDC token"')
  t.same(await mismatchesOf(() => '0x'), ['tokens/0/address'], 'no data: not the token')
  t.same(await mismatchesOf(rpcError(-32000, 'execution reverted')), ['tokens/0/address'], 'geth\'s revert without data: not the token')
})
