// An outsider's finding (outsider26): an old /credit-score payment presented again. Every paid score's settlement is on
// chain, and its calldata is the payer's authorization and signature (test/api/outsider26-scripts/score-pending-stolen.ts
// rebuilds a PAYMENT-SIGNATURE from it), so anyone holds every past payment. Presented again it is spent, and the
// front-run lookup read the last 2,000 blocks' logs, found nothing (mined earlier), asked the token's state at the
// pending block, found the nonce used (long ago) and took it for a transaction waiting in the pool: the request was
// held confirmationTimeoutMs (60 s) while eth_getLogs went out every pollingIntervalMs, then answered 503
// payment_settlement_unconfirmed, "send the same payment again", for ever. Free to anyone, a few requests a second
// kept thousands of RPC polls running beside the follower's and the watcher's. Now a nonce the head's state already
// says is used, whose settlement the window does not hold, is refused at once: 402 payment_already_used.
// Fails without the fix: the answer is 503 payment_settlement_unconfirmed (after the 60 s wait).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { FRONT_RUN_LOOKBACK_BLOCKS } from '../../src/x402/front-run.ts'
import { fund } from '../fixtures/service.ts'
import { proxiedScoreService } from '../x402/fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from '../x402/fixtures/score-payment.ts'

t.test('a payment settled before the lookup\'s log window, presented again, is refused at once as spent', async (t) => {
  const { h, b, balance } = await proxiedScoreService(t)
  const body = JSON.stringify(await creditScoreBody(h, 'o26-old-src'))
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await fund(h.devnet, b, payer, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, JSON.parse(body), payerKey)
  const post = async () => {
    const reply = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body })
    return { status: reply.status, code: ((await reply.json()) as { code?: string }).code }
  }
  const before = await balance(payer)
  t.equal((await post()).status, 200, 'paid and served')

  // The settlement falls out of the window: blocks and time (the horizon too), and a restart forgets the
  // facilitator's own settlements (kept in memory only).
  const blocks = Number(FRONT_RUN_LOOKBACK_BLOCKS) + 100
  const test = createTestClient({ chain: networkChain(b), transport: http(b.rpcUrl, { timeout: 60_000 }), mode: 'anvil' })
  await test.increaseTime({ seconds: blocks })
  for (let left = blocks; left > 0; left -= 250) await test.mine({ blocks: Math.min(250, left) })
  await h.restart()

  const again = await post()
  t.same(again, { status: 402, code: 'payment_already_used' }, 'spent: refused, not held as a settlement pending')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
