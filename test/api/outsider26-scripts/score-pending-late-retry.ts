// outsider26: a /credit-score payment the service's own facilitator broadcast while its request delivered nothing
// (503 with Retry-After: the receipt unreadable, as during an RPC outage, or the service restarted between the
// broadcast and the delivery; README "Credit score": "the same payment sent again is answered from that settlement,
// once", "a restart does not lose it either") buys the score only while the chain's head is within maxTimeoutSeconds
// plus the 60 s confirmation wait of the settlement's block (about 2 minutes). A payer whose retry comes later (an
// outage, a deploy or a restart that took longer; each retry meanwhile answered 503 "retry later") is refused 402
// payment_already_used: charged the price, never served. Cost to an attacker: none can cause it cheaply (an RPC
// outage or a slow restart does); harm: the payer loses the price of each score whose settlement outlived the window.
// Here the chain's time moves 10 minutes between the 503 and the retry (anvil's evm_increaseTime), and as many blocks
// are mined.
// Exits 1 while the late retry is refused; 0 once a payment the service settled without delivering buys its score
// when sent again however late (within the mark's life).
// node --import tsx test/api/outsider26-scripts/score-pending-late-retry.ts [seconds, default 600]
import { createTestClient, http } from 'viem'
import { networkChain } from '../../../src/chain/clients.ts'
import { proxiedScoreService } from '../../x402/fixtures/proxied-score.ts'
import { postScore, undeliveredScore } from '../fixtures/undelivered-score.ts'

const seconds = Number(process.argv[2] ?? 600)
const teardowns: (() => unknown)[] = []
let exitCode = 1
try {
  const service = await proxiedScoreService({ teardown: (fn) => void teardowns.push(fn) })
  const { h, b, balance } = service
  const { body, header, payer, before, first } = await undeliveredScore(service, 'o26-late-src')
  const post = (body: unknown, header: string) => postScore(h.url, body, header)
  console.log('first request (receipt unreadable):', first.status, first.body.code)
  console.log('payer charged:', before - (await balance(payer)))
  const test = createTestClient({ chain: networkChain(b), transport: http(b.rpcUrl), mode: 'anvil' })
  await test.increaseTime({ seconds })
  // As many blocks as that time brings at a block a second (more than the lookup's 2,000-block log window).
  await test.mine({ blocks: Math.max(1, seconds) })
  const late = await post(body, header)
  console.log(`the same payment ${seconds} s of chain time later:`, late.status, late.body.code ?? `subject ${late.body.subject}`, late.body.detail ?? '')
  console.log('payer charged in all:', before - (await balance(payer)))
  exitCode = late.status === 200 ? 0 : 1
  console.log(exitCode === 1 ? 'FINDING: charged, never served' : 'holds: the late retry is served')
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
process.exit(exitCode)
