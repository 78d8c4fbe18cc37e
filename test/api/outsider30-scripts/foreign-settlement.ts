// outsider30 (described, not fixed): any EIP-3009 transfer of exactly the score's price to the score's payee, sent by
// someone else than this service's facilitator within the last maxTimeoutSeconds + 60 s, buys one score for whoever
// presents it first, whatever it was paid for. Here a payer pays the payee the price for something else (another x402
// resource of the same payee, another deployment of this service with the same payTo and its own facilitator key: the
// on-chain transfer is the same) and sends the transfer itself; a stranger with no tokens rebuilds the payment from the
// transaction's calldata and the 402's PAYMENT-REQUIRED, and gets a score about a subject of its choice, for its own
// key. Cost to the stranger: nothing. Exits 1 while the stranger is served.
// node --import tsx test/api/outsider30-scripts/foreign-settlement.ts
import { exportJWK, generateKeyPair } from 'jose'
import { createWalletClient, http, type Address } from 'viem'
import { networkChain } from '../../../src/chain/clients.ts'
import { startHarness } from '../../fixtures/service.ts'
import { creditScoreBody } from '../../x402/fixtures/score-payment.ts'
import { postScore } from '../fixtures/undelivered-score.ts'
import { scoreCall, signedTransfer, transferWithAuthorizationAbi as abi } from './transfer-authorization.ts'


const h = await startHarness()
let served = false
try {
  const { b, required, accepted, payer } = await scoreCall(h, 'o30-foreign-src', 1_000_000n)
  const { authorization, signature, header } = await signedTransfer(payer, required, b.chainId, BigInt(accepted.amount))
  const wallet = createWalletClient({ account: payer, chain: networkChain(b), transport: http(b.rpcUrl) })
  const tx = await wallet.writeContract({ address: accepted.asset as Address, abi, functionName: 'transferWithAuthorization', args: [authorization.from, authorization.to, authorization.value, authorization.validAfter, authorization.validBefore, authorization.nonce, signature] })
  console.log('the payer paid the payee the price for something else:', tx)
  await new Promise((r) => setTimeout(r, 2500))
  // The stranger: the calldata's authorization and signature, and the 402's requirements (the same header).
  const other = (await creditScoreBody(h, 'o30-foreign-other')) as { subject: string }
  const key = await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })).publicKey)
  const stolen = await postScore(h.url, { subject: other.subject, publicKey: key }, header)
  console.log('the stranger presents it about a subject of its choice:', stolen.status, stolen.body.code ?? '', stolen.body.subject ?? '')
  served = stolen.status === 200
} finally {
  await h.stop()
}
console.log(served ? 'a transfer paid for something else bought a stranger a score' : 'refused')
process.exit(served ? 1 : 0)
