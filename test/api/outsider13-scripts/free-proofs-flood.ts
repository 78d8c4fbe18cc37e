// outsider13: at the default chain read budget (400 a second, burst 800; a wallet a quarter, 100 and 200) and rate
// limit (2,000 a second per wallet), W free signed-in wallets of one client address register jobs with random funding
// hashes on devnet-b (one receipt read each, 422 proof_not_found) for S seconds, C at a time, while an honest agent
// registers one job every 100 ms (also with a random hash: what matters is whether its proof is read, 422, or refused
// 503 chain_reads_exhausted). In process, real devnet. Run:
// node --import tsx test/api/outsider13-scripts/free-proofs-flood.ts [seconds] [concurrency] [wallets]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { signedIn, startHarness } from '../../fixtures/service.ts'
import { randomHash } from '../fixtures/api.ts'

const S = Number(process.argv[2] ?? 5)
const C = Number(process.argv[3] ?? 32)
const W = Number(process.argv[4] ?? 4)
const h = await startHarness({ config: { rateLimitPerSecond: 2000 } })
try {
  const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig
  const job = (agent: string) => ({ jobId: `job_o13_${randomHash().slice(2, 14)}`, network: networkB.slug, asset: 'USDC', agent, receivableAtomic: '1000000', dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: randomHash() })
  const wallets = await Promise.all(Array.from({ length: W }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  const agent = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const tally = (map: Map<string, number>, k: string) => map.set(k, (map.get(k) ?? 0) + 1)
  const strangers = new Map<string, number>()
  const honest = new Map<string, number>()
  const end = Date.now() + S * 1000
  const flood = Promise.all(Array.from({ length: C }, async (_, i) => {
    const w = wallets[i % W]!
    while (Date.now() < end) { const r = await w.post('/credit/jobs', job(w.address!)); tally(strangers, `${r.status} ${r.body.code ?? ''}`) }
  }))
  const loop = (async () => { while (Date.now() < end) { const r = await agent.post('/credit/jobs', job(agent.address!)); tally(honest, `${r.status} ${r.body.code ?? ''}`); await new Promise((x) => setTimeout(x, 100)) } })()
  await Promise.all([flood, loop])
  console.log(JSON.stringify({ seconds: S, concurrency: C, wallets: W, strangers: Object.fromEntries(strangers), honestAgent: Object.fromEntries(honest) }))
} finally {
  await h.stop()
}
