// outsider12: the payer's EIP-3009 authorization pays the credit score's payee whoever submits it. A stranger who sees
// it (the facilitator's settlement waiting in a public mempool, or the PAYMENT-SIGNATURE on its way) submits
// transferWithAuthorization first, for the gas: the price leaves the payer's wallet for the service's payee, and the
// service answers 402 payment_already_used ("sign a new one"): the payer paid and got no score, and each new signature
// can be taken the same way. The service holds what it needs to tell that this authorization paid it (its payee, the
// amount, the nonce now used on chain) and never answered it. Here the stranger submits it just before the request
// that carries it. Fails on 04104a7: 402 payment_already_used, the price charged.
import t from 'tap'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { exportJWK, generateKeyPair } from 'jose'
import { createPublicClient, createWalletClient, erc20Abi, http, parseAbi, type Address, type Hex } from 'viem'
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

t.test('an authorization a stranger submitted first still buys the score it paid for', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o12-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const stranger = await fundedAccount(h.devnet, networkB, 0n)
  let submitted = false
  const frontRunning: typeof fetch = async (input, init) => {
    const header = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get('payment-signature')
    if (header !== null && !submitted) {
      submitted = true
      const { payload } = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: { authorization: Record<string, string>; signature: Hex } }
      const a = payload.authorization
      const wallet = createWalletClient({ account: stranger, chain, transport: http(networkB.rpcUrl) })
      const hash = await wallet.writeContract({ address: token, abi: eip3009, functionName: 'transferWithAuthorization', args: [a['from'] as Address, a['to'] as Address, BigInt(a['value']!), BigInt(a['validAfter']!), BigInt(a['validBefore']!), a['nonce'] as Hex, payload.signature] })
      await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    }
    return fetch(input, init)
  }
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
  const before = await balanceOf(payer.address)
  const response = await wrapFetchWithPayment(frontRunning, client)(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject: borrower.address, publicKey: await exportJWK(publicKey) }) })
  const body = (await response.json()) as { code?: string; jwe?: string }
  t.ok(submitted, 'the stranger submitted the authorization')
  t.equal(before - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'the payer was charged the price, to the score\'s payee')
  t.equal(response.status, 200, `the payer gets the score it paid for (got ${response.status} ${body.code ?? ''})`)
})
