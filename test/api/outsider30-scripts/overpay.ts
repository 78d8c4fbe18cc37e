// outsider30 probe: a /credit-score payment whose authorization moves more than the price (accepted.amount the price,
// authorization.value 100 times it). README: "a payment for another network, asset, amount or payee is 402
// payment_not_accepted". Exits 1 when the service settles it (the payer charged more than the price).
// node --import tsx test/api/outsider30-scripts/overpay.ts
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { networkChain } from '../../../src/chain/clients.ts'
import { startHarness } from '../../fixtures/service.ts'
import { postScore } from '../fixtures/undelivered-score.ts'
import { scoreCall, signedTransfer } from './transfer-authorization.ts'

const h = await startHarness()
let overcharged = false
try {
  const { b, body, required, accepted, payer } = await scoreCall(h, 'o30-overpay-src', 10_000_000n)
  const chain = createPublicClient({ chain: networkChain(b), transport: http(b.rpcUrl) })
  const balance = () => chain.readContract({ address: accepted.asset as Address, abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] })
  const before = await balance()
  for (const factor of [100n, 1n]) {
    const { header } = await signedTransfer(payer, required, b.chainId, BigInt(accepted.amount) * factor)
    const reply = await postScore(h.url, body, header)
    console.log(`authorization of ${factor} x the price:`, reply.status, reply.body.code ?? '', 'payer paid', before - (await balance()))
    if (factor > 1n && reply.status === 200) overcharged = true
  }
} finally {
  await h.stop()
}
process.exit(overcharged ? 1 : 0)
