// outsider13: one payment, re-signed, sent at once. The payer signs a /credit-score payment, settles it itself on chain
// (transferWithAuthorization, as any stranger may), then sends the service several payloads at once: the same
// authorization re-signed with other validBefore values (same nonce, so only one can ever be settled: each is the
// one settlement already mined). The README: "the same authorization again, even re-signed, buys no second score";
// a concurrent request with the same payment is 409 payment_in_flight. One price paid must buy one score.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { createPublicClient, createWalletClient, erc20Abi, http, parseAbi, type Address, type Hex } from 'viem'
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

t.test('one settled payment, re-signed and sent at once, buys one score', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o13-race', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
  const body = JSON.stringify({ subject: borrower.address, publicKey: await exportJWK(publicKey) })
  let header: string | undefined
  const intercept: typeof fetch = async (input, init) => {
    const found = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get('payment-signature')
    if (found === null) return fetch(input, init)
    header = found
    return new Response('{}', { status: 599, headers: { 'content-type': 'application/json' } })
  }
  await wrapFetchWithPayment(intercept, client)(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const decoded = JSON.parse(Buffer.from(header!, 'base64').toString('utf8')) as { payload: { authorization: Record<string, string>; signature: Hex } }
  const a = decoded.payload.authorization
  // The payer settles it itself.
  const before = await balanceOf(payer.address)
  const wallet = createWalletClient({ account: payer, chain, transport: http(networkB.rpcUrl) })
  const hash = await wallet.writeContract({ address: token, abi: eip3009, functionName: 'transferWithAuthorization', args: [a['from'] as Address, a['to'] as Address, BigInt(a['value']!), BigInt(a['validAfter']!), BigInt(a['validBefore']!), a['nonce'] as Hex, decoded.payload.signature] })
  await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  t.equal(before - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'one price paid')
  // Re-signed variants: same nonce, validBefore - k.
  const domain = { name: 'USD Coin', version: '2', chainId: networkB.chainId, verifyingContract: token }
  const types = { TransferWithAuthorization: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }] } as const
  const variants: string[] = [header!]
  for (let k = 1; k < 6; k++) {
    const authorization = { ...a, validBefore: String(BigInt(a['validBefore']!) - BigInt(k)) }
    const signature = await payer.signTypedData({ domain, types, primaryType: 'TransferWithAuthorization', message: { from: a['from'] as Address, to: a['to'] as Address, value: BigInt(a['value']!), validAfter: BigInt(a['validAfter']!), validBefore: BigInt(authorization.validBefore), nonce: a['nonce'] as Hex } })
    variants.push(Buffer.from(JSON.stringify({ ...decoded, payload: { ...decoded.payload, authorization, signature } })).toString('base64'))
  }
  const answers = await Promise.all(variants.map(async (v) => {
    const response = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': v }, body })
    const reply = (await response.json()) as { code?: string; jwe?: string }
    return `${response.status} ${reply.code ?? (reply.jwe ? 'score' : '')}`
  }))
  t.comment(`answers: ${JSON.stringify(answers)}`)
  t.equal(answers.filter((x) => x === '200 score').length, 1, 'one price paid buys one score')
})
