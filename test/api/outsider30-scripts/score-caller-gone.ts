// outsider30: a /credit-score caller whose connection closed before its answer (a client's timeout, a proxy's, a
// dropped connection) was charged and never served: the service verified, computed, settled the payment and wrote the
// answer to the closed connection; the same payment sent again with the same body was refused 402
// payment_already_used. Here a plain fetch aborts 30 ms after it was sent (ABORT_MS to change it). Cost to the payer:
// the price, for nothing. Exits 1 while the payer is charged and its retry refused (fixed: the first call settles
// nothing, or its settlement stays owed to it; test/api/outsider30-score-caller-gone.test.ts).
// node --import tsx test/api/outsider30-scripts/score-caller-gone.ts
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../../src/chain/clients.ts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { fund, startHarness } from '../../fixtures/service.ts'
import { creditScoreBody, creditScoreSignature } from '../../x402/fixtures/score-payment.ts'
import { postScore } from '../fixtures/undelivered-score.ts'

const h = await startHarness()
let charged = false
let served = false
try {
  const b = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const chain = createPublicClient({ chain: networkChain(b), transport: http(b.rpcUrl) })
  const balance = (a: Address) => chain.readContract({ address: b.tokens[0]!.address as Address, abi: erc20Abi, functionName: 'balanceOf', args: [a] })
  const body = await creditScoreBody(h, 'o30-abort-src')
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, b, body, payerKey)
  const before = await balance(payer)
  const abort = new AbortController()
  const sent = fetch(`${h.url}/credit-score`, { method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify(body) })
  setTimeout(() => abort.abort(), Number(process.env.ABORT_MS ?? 30))
  console.log('first call:', await sent.then((r) => r.status, (e) => `aborted by the client (${(e as Error).name})`))
  for (let i = 0; i < 100 && (await balance(payer)) === before; i++) await new Promise((r) => setTimeout(r, 100))
  await new Promise((r) => setTimeout(r, 2000))
  charged = (await balance(payer)) < before
  console.log('payer charged:', charged, before - (await balance(payer)))
  const retry = await postScore(h.url, body, header)
  console.log('the same payment and body again:', retry.status, retry.body.code ?? '', retry.body.detail ?? '')
  served = retry.status === 200
} finally {
  await h.stop()
}
console.log(charged && !served ? 'charged, never served' : 'served or not charged')
process.exit(charged && !served ? 1 : 0)
