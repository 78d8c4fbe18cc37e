// outsider26: an old /credit-score payment presented again. Every paid score's settlement is on chain: its calldata is
// the payer's authorization and signature, to the score's payee for the price, so anyone can rebuild the
// PAYMENT-SIGNATURE of any past payment (test/api/outsider26-scripts/score-pending-stolen.ts shows how). Presented
// again, it is spent (402 payment_already_used), and the front-run lookup (src/x402/front-run.ts) looks for its
// settlement in the last 2,000 blocks' logs; a settlement older than that is not found, but the token's
// authorizationState at the pending block says the nonce is used (it was, long ago), so the lookup takes it for a
// transaction waiting in the pool and polls eth_getLogs every pollingIntervalMs for confirmationTimeoutMs (60 s),
// then answers 503 payment_settlement_unconfirmed, "send the same payment again": the same again, for ever.
// Cost to the attacker: nothing (no wallet, no tokens; one request of its client address's chain-read part each);
// harm: each request holds a request open 60 s and spends 60 s / pollingIntervalMs of the RPC provider's calls (1,200
// on the devnet's 50 ms, 60 on a real network's 1 s), which the service's chain follower, wallet watcher and operator
// share: a few requests a second keep thousands of polls running. Here: one honest paid score, 2,100 blocks (and seconds) mined, the
// service restarted (it remembers its own settlements in memory only; past their horizon any lookup forgets them too),
// then N (default 4) requests with that payment at once. Exits 1 while one waits past 5 s;
// 0 once an old spent payment is refused at once.
// node --import tsx test/api/outsider26-scripts/score-old-payment-wait.ts [N]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../../src/chain/clients.ts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { fund } from '../../fixtures/service.ts'
import { proxiedScoreService } from '../../x402/fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from '../../x402/fixtures/score-payment.ts'

const n = Number(process.argv[2] ?? 4)
const teardowns: (() => unknown)[] = []
let exitCode = 1
try {
  const { h, b, proxy } = await proxiedScoreService({ teardown: (fn) => void teardowns.push(fn) })
  const body = await creditScoreBody(h, 'o26-old-src')
  const payerKey = generatePrivateKey()
  await fund(h.devnet, b, privateKeyToAccount(payerKey).address, 1_000_000n)
  const header = await creditScoreSignature(h, b as NetworkConfig, body, payerKey)
  const post = async () => {
    const reply = await fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify(body) })
    return { status: reply.status, code: ((await reply.json()) as { code?: string }).code }
  }
  console.log('the honest paid score:', (await post()).status)
  const test = createTestClient({ chain: networkChain(b), transport: http(b.rpcUrl, { timeout: 60_000 }), mode: 'anvil' })
  await test.increaseTime({ seconds: 2100 })
  for (let left = 2100; left > 0; left -= 300) await test.mine({ blocks: Math.min(300, left) })
  // The facilitator's own settlements are remembered in memory only: a restart (or any lookup past their horizon) forgets them.
  await h.restart()
  const logsBefore = proxy.count('eth_getLogs')
  const started = Date.now()
  const replies = await Promise.all(Array.from({ length: n }, async () => ({ ...(await post()), ms: Date.now() - started })))
  const getLogs = proxy.count('eth_getLogs') - logsBefore
  for (const r of replies) console.log(`  the same payment again: ${r.status} ${r.code} after ${r.ms} ms`)
  console.log(`eth_getLogs meanwhile (the service's pollers' included): ${getLogs}`)
  const slowest = Math.max(...replies.map((r) => r.ms))
  exitCode = slowest > 5_000 ? 1 : 0
  console.log(exitCode === 1 ? 'FINDING: an old spent payment holds its request and polls the RPC' : 'holds: refused at once')
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
process.exit(exitCode)
