// outsider13: a /credit-score payment someone else settled first, through this service's own public facilitator.
// outsider12's finding: a stranger who sees a payer's PAYMENT-SIGNATURE (on its way, or the settlement pending in a
// public mempool) submits transferWithAuthorization first; the payer was charged and answered 402. Now a settlement
// someone else sent counts as the payment, "not sent by the facilitator's own signers (a settlement the facilitator
// sent was already answered by the request it settled)" (README "A payment someone else settled first"). But the
// facilitator is public (POST /x402/devnet-b-facilitator/settle, anyone): the stranger posts the payer's payment there,
// paying not even the gas (the facilitator does), and no /credit-score request was answered by that settlement. The
// payer, charged the price to the score's payee, must still get the score it paid for.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { facilitatorUrl } from '../../src/x402/facilitator-url.ts'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
const token = networkB.tokens[0]?.address as Address
const reader = createPublicClient({ chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
const balanceOf = (holder: Address) => reader.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })

t.test('a payment a stranger settled through the public facilitator still buys the score', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'o13-own-fac', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  let settled: { status: number; body: Record<string, unknown> } | undefined
  const frontRunning: typeof fetch = async (input, init) => {
    const header = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get('payment-signature')
    if (header !== null && settled === undefined) {
      // The stranger: the payer's payment, as the resource server would hand it to the facilitator.
      const paymentPayload = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { accepted: unknown }
      const response = await fetch(`${facilitatorUrl(networkB, { baseUrl: h.url })}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: paymentPayload.accepted }) })
      settled = { status: response.status, body: (await response.json()) as Record<string, unknown> }
    }
    return fetch(input, init)
  }
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
  const before = await balanceOf(payer.address)
  const response = await wrapFetchWithPayment(frontRunning, client)(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject: borrower.address, publicKey: await exportJWK(publicKey) }) })
  const body = (await response.json()) as { code?: string; detail?: string }
  t.comment(`the stranger's settle: ${settled?.status} ${JSON.stringify(settled?.body).slice(0, 300)}`)
  t.equal(settled?.body['success'], true, 'the public facilitator settled the payer\'s payment for the stranger')
  t.equal(before - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'the payer was charged the price, to the score\'s payee')
  t.equal(response.status, 200, `the payer gets the score it paid for (got ${response.status} ${body.code ?? ''}: ${body.detail ?? ''})`)
})
