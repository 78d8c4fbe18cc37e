// outsider13: at the default chain read budget (400 a second, burst 800; a wallet a quarter) and the default rate
// limit (2,000 a second per client address), one client address posts the facilitator's public verify with payments
// signed by fresh keys (no tokens, no gas, no sign-in) for S seconds, C at a time, while an honest payer (tokens in its
// wallet) sends one payment to verify every 100 ms. Prints what each got. In process, real devnet. Run:
// node --import tsx test/api/outsider13-scripts/free-payers-flood.ts [seconds] [concurrency] [payloads signed beforehand]
import { generatePrivateKey } from 'viem/accounts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../../src/score/settings.ts'
import { facilitatorUrl } from '../../../src/x402/facilitator-url.ts'
import { startHarness } from '../../fixtures/service.ts'
import { exactRequirements, pay } from '../../x402/fixtures/payments.ts'

const S = Number(process.argv[2] ?? 5)
const C = Number(process.argv[3] ?? 32)
const N = Number(process.argv[4] ?? 3000)
const h = await startHarness({ config: { rateLimitPerSecond: 2000 } })
try {
  const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const url = `${facilitatorUrl(networkB, { baseUrl: h.url })}/verify`
  const requirements = exactRequirements({ network: networkB, payTo: h.devnet.accounts.scorePayee.address, amountAtomic: DEVNET_PRICE_ATOMIC })
  // The stranger signs its payloads beforehand (offline, on its own machines).
  const signed = await Promise.all(Array.from({ length: N }, async () => JSON.stringify({ x402Version: 2, paymentPayload: await pay(generatePrivateKey(), requirements), paymentRequirements: requirements })))
  const post = async (payload: string) => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload })
    const body = (await response.json()) as Record<string, unknown>
    return `${response.status} ${body['code'] ?? body['invalidReason'] ?? body['isValid']}`
  }
  const tally = (map: Map<string, number>, k: string) => map.set(k, (map.get(k) ?? 0) + 1)
  const strangers = new Map<string, number>()
  const honest = new Map<string, number>()
  const end = Date.now() + S * 1000 // from here
  let next = 0
  const flood = Promise.all(Array.from({ length: C }, async () => { while (Date.now() < end && next < N) tally(strangers, await post(signed[next++]!)) }))
  const agent = (async () => { while (Date.now() < end) { tally(honest, await post(JSON.stringify({ x402Version: 2, paymentPayload: await pay(h.devnet.accounts.borrower.privateKey, requirements), paymentRequirements: requirements }))); await new Promise((r) => setTimeout(r, 100)) } })()
  await Promise.all([flood, agent])
  console.log(JSON.stringify({ seconds: S, concurrency: C, strangers: Object.fromEntries(strangers), honestPayer: Object.fromEntries(honest) }))
} finally {
  await h.stop()
}
