// The service's senders behind an RPC gateway that sends a raw transaction twice (it lost the node's first
// answer): the node mined the first and refused the second "nonce too low". Before sentOnce (src/chain/clients.ts),
// the sender took that refusal for another transaction's and signed the transferWithAuthorization again with a fresh
// nonce: sent twice, the second reverted (the authorization used), and the facilitator answered `success: false` for a
// payment made (review27); the operator's settleJob went twice too, the second reverted (JobNotOpen). Now the send
// answers the hash of the transaction the node knows: done once, answered done.
import t from 'tap'
import { createPublicClient, erc20Abi, http, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients, networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { sendSettleJob } from '../../src/chain/operator.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { NetworkFacilitator, servedPayees } from '../../src/x402/facilitator.ts'
import { exactRequirements, pay } from '../x402/fixtures/payments.ts'
import { startRpcProxy } from './fixtures/rpc-proxy.ts'
import { jobKey } from '../../src/chain/ids.ts'

compileContracts()
const devnet = await startDevnet()
t.teardown(() => devnet.stop())
const network = devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
const { accounts } = devnet
const token = network.tokens[0]?.address as Address
const chain = createPublicClient({ chain: networkChain(network), transport: http(network.rpcUrl) })
const balanceOf = (holder: Address) => chain.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })

t.test('a settlement whose raw transaction a gateway sends twice settles once and answers success', async (t) => {
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const payees = servedPayees(devnet.networks, { [network.slug]: [accounts.supplier.address] }, [])
  const facilitator = new NetworkFacilitator({ ...network, rpcUrl: proxy.url }, { payees })
  const amountAtomic = 10_000n
  const requirements = exactRequirements({ network, payTo: accounts.supplier.address, amountAtomic })
  const payload = await pay(accounts.borrower.privateKey, requirements)
  const before = { payee: await balanceOf(accounts.supplier.address), sent: await chain.getTransactionCount({ address: facilitator.sender }) }
  proxy.setRepeatedOf(['eth_sendRawTransaction'])
  const settled = await facilitator.settle({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements } as never, undefined)
  t.equal((await balanceOf(accounts.supplier.address)) - before.payee, amountAtomic, 'the payee received the amount once')
  t.equal((await chain.getTransactionCount({ address: facilitator.sender })) - before.sent, 1, 'one transaction of the facilitator, not a second that reverts')
  t.equal(settled.success, true, `the payment made is answered settled: ${settled.errorReason ?? ''}`)
  const receipt = await chain.getTransactionReceipt({ hash: settled.transaction as Hex })
  t.equal(receipt.status, 'success', 'the transaction answered is the mined transfer')
})

t.test('an operator settlement whose raw transaction a gateway sends twice is sent once and answers its receipt', async (t) => {
  const proxy = await startRpcProxy(network.rpcUrl)
  t.teardown(() => proxy.close())
  const clients = createNetworkClients({ ...network, rpcUrl: proxy.url })
  const jobId = 'sent-once-job'
  const borrower = privateKeyToAccount(accounts.borrower.privateKey).address
  const funding = await new ChainAgent(network, privateKeyToAccount(accounts.jobClient.privateKey)).fundJob(jobId, 'USDC', 1_000_000n, borrower)
  await chain.waitForTransactionReceipt({ hash: funding, pollingInterval: 50 })
  const operator = accounts.operator.address
  const before = await chain.getTransactionCount({ address: operator })
  proxy.setRepeatedOf(['eth_sendRawTransaction'])
  const settled = await sendSettleJob(clients, { jobKey: jobKey(network, jobId), offerKeys: [] }).catch((error: unknown) => error)
  t.equal((await chain.getTransactionCount({ address: operator })) - before, 1, 'one transaction of the operator, not a second that reverts')
  t.same((settled as { facts?: Array<{ name: string }> }).facts?.map((fact) => fact.name), ['JobSettled'], 'answered the settlement mined')
})
