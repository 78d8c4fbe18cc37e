// outsider30's scripts: an EIP-3009 transferWithAuthorization to the score's payee, signed outside any x402 client (any
// value), and the x402 payment header that presents it to /credit-score with the 402's requirements.
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types'
import { toHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { fund, type Harness } from '../../fixtures/service.ts'
import { creditScoreBody } from '../../x402/fixtures/score-payment.ts'
import { postScore } from '../fixtures/undelivered-score.ts'

const TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' },
  ],
} as const

/** The token's transferWithAuthorization with a `bytes` signature: anyone holding a signed authorization may send it. */
export const transferWithAuthorizationAbi = [{ type: 'function', name: 'transferWithAuthorization', stateMutability: 'nonpayable', inputs: [
  { name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }, { name: 'signature', type: 'bytes' }], outputs: [] }] as const

/** `payer`'s authorization of `valueAtomic` to `accepted.payTo`, valid from 10 minutes ago for 60 s, and its PAYMENT-SIGNATURE for `required`. */
export async function signedTransfer(payer: PrivateKeyAccount, required: PaymentRequired, chainId: number, valueAtomic: bigint) {
  const accepted = required.accepts[0] as PaymentRequirements
  const now = Math.floor(Date.now() / 1000)
  const authorization = { from: payer.address, to: accepted.payTo as Address, value: valueAtomic, validAfter: BigInt(now - 600), validBefore: BigInt(now + 60), nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) }
  const extra = accepted.extra as { name: string; version: string }
  const signature: Hex = await payer.signTypedData({
    domain: { name: extra.name, version: extra.version, chainId, verifyingContract: accepted.asset as Address },
    types: TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  })
  const wire = { ...authorization, value: authorization.value.toString(), validAfter: authorization.validAfter.toString(), validBefore: authorization.validBefore.toString() }
  const header = encodePaymentSignatureHeader({ x402Version: 2, resource: required.resource, accepted, payload: { authorization: wire, signature } } as never)
  return { accepted, authorization, signature, header }
}

/** A score request about a fresh borrower (`sourceId`), its 402's requirements, and a fresh payer holding `tokensAtomic` on the score's network. */
export async function scoreCall(h: Harness, sourceId: string, tokensAtomic: bigint) {
  const b = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const body = (await creditScoreBody(h, sourceId)) as { subject: string }
  const required = decodePaymentRequiredHeader((await postScore(h.url, body)).headers.get('payment-required') as string)
  const payer = privateKeyToAccount(generatePrivateKey())
  await fund(h.devnet, b, payer.address, tokensAtomic)
  return { b, body, required, accepted: required.accepts[0] as PaymentRequirements, payer }
}
