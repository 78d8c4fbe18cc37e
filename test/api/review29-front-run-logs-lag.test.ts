// review29: outsider26 refused at once (402 payment_already_used) a payment whose nonce the head's state says is used
// and whose AuthorizationUsed log the 2,000-block window did not show after three reads a polling interval apart (50 ms
// on the devnet). A load-balanced provider's logs lag its state by a few blocks: a stranger's front-run settlement of
// the payer's own payment (which counts as the payment, src/x402/front-run.ts), mined a block or two before the
// payer's request, was taken for an old one, and the payer, charged, was refused and told to sign a new one. Now the
// state RECENT_STATE_BLOCKS below the head decides: unused there, the settlement is recent and its log waited for.
// Fails without the fix: 402 payment_already_used while the logs lag.
// And a nonce cancelled (cancelAuthorization: used, with no AuthorizationUsed ever) within those blocks is refused at
// once, not waited for as a settlement whose log lags. Fails without that check: the request is held
// confirmationTimeoutMs with eth_getLogs every polling interval, then 503 payment_settlement_unconfirmed.
import t from 'tap'
import { decodePaymentSignatureHeader } from '@x402/core/http'
import { createWalletClient, http, parseAbi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { eip3009 } from '../fixtures/score-network.ts'
import { fund, fundedAccount } from '../fixtures/service.ts'
import { proxiedScoreService } from '../x402/fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from '../x402/fixtures/score-payment.ts'
import { postScore } from './fixtures/undelivered-score.ts'

t.test('a stranger\'s settlement of the payment mined just before the request, its log not shown yet, buys the score', async (t) => {
  const { h, b, proxy, chain, balance } = await proxiedScoreService(t)
  const body = await creditScoreBody(h, 'r29-lag-src')
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  const before = await balance(payer)

  // The stranger submits the payer's authorization itself (seen on its way) and it is mined.
  const { signature, authorization: a } = decodePaymentSignatureHeader(header).payload as { signature: Hex; authorization: Record<string, string> }
  const stranger = await fundedAccount(h.devnet, b, 0n)
  const wallet = createWalletClient({ account: stranger, chain: networkChain(b), transport: http(b.rpcUrl) })
  const args = [a['from'] as Address, a['to'] as Address, BigInt(a['value'] as string), BigInt(a['validAfter'] as string), BigInt(a['validBefore'] as string), a['nonce'] as Hex, signature] as const
  const hash = await wallet.writeContract({ address: b.tokens[0]?.address as Address, abi: eip3009, functionName: 'transferWithAuthorization', args })
  t.equal((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success', 'the stranger\'s settlement is mined')

  // The service's provider answers eth_getLogs from a node 20 blocks behind, until the lookup has read the window six
  // times (more than the four reads that took the settlement for an old one; the follower's reads by block hash are
  // not counted).
  proxy.reset()
  proxy.setLogsLag(20n)
  const lookups = () => proxy.params('eth_getLogs').filter((params) => (params as [{ fromBlock?: string }])[0].fromBlock !== undefined).length
  let done = false
  const lifted = (async () => {
    while (!done && lookups() < 6) await new Promise((resolve) => setTimeout(resolve, 20))
    // 0, not undefined: a call in flight reads the lag again after an await (undefined there throws in the proxy).
    proxy.setLogsLag(0n)
  })()
  // A 503 (an RPC read of the lookup timed out on the loaded machine: nothing decided) is sent again, as the payer is told to.
  let reply = await postScore(h.url, body, header)
  for (let i = 0; i < 5 && reply.status === 503; i++) reply = await postScore(h.url, body, header)
  done = true
  await lifted
  t.equal(reply.status, 200, `the payer is served from the stranger's settlement: ${reply.status} ${reply.body.code} ${reply.body.detail ?? ''}`)
  t.type(reply.body.jwe, 'string')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
  t.equal((await postScore(h.url, body, header)).status, 402, 'once')
})

t.test('a payment its payer cancelled on chain just before is refused at once, not waited for', async (t) => {
  const { h, b, proxy, chain } = await proxiedScoreService(t)
  const body = await creditScoreBody(h, 'r29-cancel-src')
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey)
  await fund(h.devnet, b, payer.address, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  const { nonce } = (decodePaymentSignatureHeader(header).payload as { authorization: { nonce: Hex } }).authorization
  const token = b.tokens[0]!
  const cancel = await payer.signTypedData({
    domain: { name: token.eip712Name, version: token.eip712Version, chainId: b.chainId, verifyingContract: token.address as Address },
    types: { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
    primaryType: 'CancelAuthorization',
    message: { authorizer: payer.address, nonce },
  })
  const wallet = createWalletClient({ account: payer, chain: networkChain(b), transport: http(b.rpcUrl) })
  const abi = parseAbi(['function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)'])
  const hash = await wallet.writeContract({ address: token.address as Address, abi, functionName: 'cancelAuthorization', args: [payer.address, nonce, cancel] })
  t.equal((await chain.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success', 'the payer cancelled the authorization')

  proxy.reset()
  const reply = await postScore(h.url, body, header)
  t.same([reply.status, reply.body.code], [402, 'payment_already_used'], `refused as spent: ${reply.status} ${reply.body.code}`)
  const lookups = proxy.params('eth_getLogs').filter((params) => (params as [{ fromBlock?: string }])[0].fromBlock !== undefined).length
  t.ok(lookups <= 3, `a few log reads, no wait (${lookups})`)
})
