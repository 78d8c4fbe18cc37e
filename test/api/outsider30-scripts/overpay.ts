// outsider30 probe: a /credit-score payment whose authorization moves more than the price (accepted.amount the price,
// authorization.value 100 times it). README: "a payment for another network, asset, amount or payee is 402
// payment_not_accepted". Exits 1 when the service settles it (the payer charged more than the price).
// node --import tsx test/api/outsider30-scripts/overpay.ts
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { createPublicClient, erc20Abi, http, toHex, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../../src/chain/clients.ts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { fund, startHarness } from '../../fixtures/service.ts'
import { creditScoreBody } from '../../x402/fixtures/score-payment.ts'
import { postScore } from '../fixtures/undelivered-score.ts'

const h = await startHarness()
let overcharged = false
try {
  const b = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const chain = createPublicClient({ chain: networkChain(b), transport: http(b.rpcUrl) })
  const body = (await creditScoreBody(h, 'o30-overpay-src')) as { subject: string }
  const unpaid = await postScore(h.url, body)
  const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') as string)
  const accepted = required.accepts[0]!
  const payer = privateKeyToAccount(generatePrivateKey())
  await fund(h.devnet, b, payer.address, 10_000_000n)
  const balance = () => chain.readContract({ address: accepted.asset as Address, abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] })
  const before = await balance()
  const now = Math.floor(Date.now() / 1000)
  for (const factor of [100n, 1n]) {
    const authorization = { from: payer.address, to: accepted.payTo as Address, value: BigInt(accepted.amount) * factor, validAfter: BigInt(now - 600), validBefore: BigInt(now + 60), nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) }
    const extra = accepted.extra as { name: string; version: string }
    const signature = await payer.signTypedData({
      domain: { name: extra.name, version: extra.version, chainId: b.chainId, verifyingContract: accepted.asset as Address },
      types: { TransferWithAuthorization: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }] },
      primaryType: 'TransferWithAuthorization',
      message: authorization,
    })
    const wire = { ...authorization, value: authorization.value.toString(), validAfter: authorization.validAfter.toString(), validBefore: authorization.validBefore.toString() }
    const header = encodePaymentSignatureHeader({ x402Version: 2, resource: required.resource, accepted, payload: { authorization: wire, signature } } as never)
    const reply = await postScore(h.url, body, header)
    console.log(`authorization of ${factor} x the price:`, reply.status, reply.body.code ?? '', 'payer paid', before - (await balance()))
    if (factor > 1n && reply.status === 200) overcharged = true
  }
} finally {
  await h.stop()
}
process.exit(overcharged ? 1 : 0)
