// outsider14: /credit-score paid with EIP-3009 authorizations outside their validity window (expired, not yet valid,
// valid for years) and with the payment's fields at their edges. What is answered, and does money move?
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { exportJWK, generateKeyPair } from 'jose'
import { createPublicClient, http, toHex, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { chainOf, devnetOf, erc20, give, type CatalogNetwork } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18414'
const subject = process.argv[3] as `0x${string}`
const { catalog, key } = await devnetOf(url)
const pay = catalog['creditScore']['payment']
const netB = (catalog['networks'] as CatalogNetwork[]).find((n) => n.slug === pay.network)!
const pub = createPublicClient({ chain: chainOf(netB), transport: http(netB.rpcUrl) })
const bal = (a: `0x${string}`) => pub.readContract({ address: pay.assetAddress, abi: erc20, functionName: 'balanceOf', args: [a] }) as Promise<bigint>
const payer = privateKeyToAccount(generatePrivateKey())
await give(netB, key('deployer'), payer.address, 10n ** 18n, 0n)
await give(netB, key('borrower'), payer.address, 0n, 1_000_000n)
const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })
const body = JSON.stringify({ subject, publicKey: await exportJWK(publicKey) })
const post = (headers: Record<string, string> = {}) => fetch(`${url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
const required = decodePaymentRequiredHeader((await post()).headers.get('payment-required')!)
const asked = required.accepts[0]!
console.log('asked', JSON.stringify(asked))
const head = (await pub.getBlock()).timestamp
async function payment(validAfter: bigint, validBefore: bigint, over: Record<string, unknown> = {}) {
  const authorization = { from: payer.address, to: asked.payTo as `0x${string}`, value: BigInt(asked.amount), validAfter, validBefore, nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) as Hex, ...over }
  const signature = await payer.signTypedData({
    domain: { name: (asked.extra as any).name, version: (asked.extra as any).version, chainId: netB.chainId, verifyingContract: asked.asset as `0x${string}` },
    types: { TransferWithAuthorization: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }] },
    primaryType: 'TransferWithAuthorization',
    message: authorization as any,
  })
  const a = authorization as any
  return encodePaymentSignatureHeader({ x402Version: 2, resource: required.resource, accepted: asked, payload: { signature, authorization: { from: a.from, to: a.to, value: a.value.toString(), validAfter: a.validAfter.toString(), validBefore: a.validBefore.toString(), nonce: a.nonce } } } as any)
}
const cases: [string, bigint, bigint][] = [
  ['expired a second ago', head - 700n, head - 1n],
  ['expires at the head block time', head - 700n, head],
  ['valid only from an hour on', head + 3600n, head + 7200n],
  ['valid from the next second', head + 1n, head + 60n],
  ['valid for ten years', head - 10n, head + 10n * 365n * 86400n],
  ['validAfter 0, validBefore max', 0n, 2n ** 256n - 1n],
  ['good (as the official client)', head - 600n, head + 60n],
]
for (const [what, after, before] of cases) {
  const b0 = await bal(payer.address)
  const answer = await post({ 'payment-signature': await payment(after, before) })
  const text = await answer.text()
  console.log(what, '->', answer.status, text.slice(0, 160).replace(/\n/g, ' '), '| settled', answer.headers.get('payment-response') ? 'yes' : 'no', '| payer moved', b0 - (await bal(payer.address)))
}
