// outsider13: two of a payer's credit-score payments settled by a stranger in one transaction. Each /credit-score
// payment is an EIP-3009 authorization to the score's payee; a stranger who sees two of them (two calls of one agent,
// the PAYMENT-SIGNATURE on its way, or the facilitator's pending settlements) submits both in one transaction through
// Multicall3 (deployed on every chain at 0xcA11...CA11), for the gas. Each authorization paid the payee the price once,
// and the service honours a payment someone else settled first when it is exactly the settlement it would have sent.
// The payer paid twice, so it is owed two scores.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, http, parseAbi, type Address, type Hex } from 'viem'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
const token = networkB.tokens[0]?.address as Address
const chain = networkChain(networkB)
const reader = createPublicClient({ chain, transport: http(networkB.rpcUrl) })
const balanceOf = (holder: Address) => reader.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
const eip3009 = parseAbi(['function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)'])
const multicall3 = parseAbi(['struct Call3 { address target; bool allowFailure; bytes callData; }', 'struct Result { bool success; bytes returnData; }', 'function aggregate3(Call3[] calls) payable returns (Result[] returnData)'])
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11' as const

t.test('two payments settled in one stranger transaction buy two scores', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o13-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const stranger = await fundedAccount(h.devnet, networkB, 0n)
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
  const body = JSON.stringify({ subject: borrower.address, publicKey: await exportJWK(publicKey) })

  // The payer signs two payments (the stranger holds each before it reaches the service).
  const headers: string[] = []
  const intercept: typeof fetch = async (input, init) => {
    const header = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get('payment-signature')
    if (header === null) return fetch(input, init)
    headers.push(header)
    return new Response('{"code":"lost"}', { status: 599, headers: { 'content-type': 'application/json' } })
  }
  for (let i = 0; i < 2; i++) await wrapFetchWithPayment(intercept, client)(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  t.equal(headers.length, 2)

  const calls = headers.map((header) => {
    const { payload } = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: { authorization: Record<string, string>; signature: Hex } }
    const a = payload.authorization
    return { target: token, allowFailure: false, callData: encodeFunctionData({ abi: eip3009, functionName: 'transferWithAuthorization', args: [a['from'] as Address, a['to'] as Address, BigInt(a['value']!), BigInt(a['validAfter']!), BigInt(a['validBefore']!), a['nonce'] as Hex, payload.signature] }) }
  })
  const before = await balanceOf(payer.address)
  const wallet = createWalletClient({ account: stranger, chain, transport: http(networkB.rpcUrl) })
  const hash = await wallet.writeContract({ address: MULTICALL3, abi: multicall3, functionName: 'aggregate3', args: [calls] })
  t.equal((await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success')
  t.equal(before - (await balanceOf(payer.address)), 2n * DEVNET_PRICE_ATOMIC, 'the payer paid the price twice, to the score\'s payee, in one transaction')

  const statuses: string[] = []
  for (const header of headers) {
    const response = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body })
    const reply = (await response.json()) as { code?: string; jwe?: string }
    statuses.push(`${response.status} ${reply.code ?? (reply.jwe ? 'score' : '')}`)
  }
  t.comment(`answers: ${JSON.stringify(statuses)}`)
  t.same(statuses, ['200 score', '200 score'], 'each payment settled by the stranger buys its score')
})
