// outsider13's free-proofs-flood.ts, with the strangers at one client address and the honest agent at another
// (x-forwarded-for, the connection a trusted proxy). Run:
// node --import tsx test/api/outsider13-scripts/free-proofs-flood-addresses.ts [seconds] [concurrency] [wallets]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { signedIn, startHarness } from '../../fixtures/service.ts'
import { postFrom, randomHash } from '../fixtures/api.ts'

const S = Number(process.argv[2] ?? 5)
const C = Number(process.argv[3] ?? 32)
const W = Number(process.argv[4] ?? 4)
const h = await startHarness({ config: { rateLimitPerSecond: 2000, trustedProxies: ['127.0.0.1'] } })
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
    while (Date.now() < end) { const r = await postFrom(w, '198.51.100.1', '/credit/jobs', job(w.address!)); tally(strangers, `${r.status} ${r.body.code ?? ''}`) }
  }))
  const loop = (async () => { while (Date.now() < end) { const r = await postFrom(agent, '198.51.100.2', '/credit/jobs', job(agent.address!)); tally(honest, `${r.status} ${r.body.code ?? ''}`); await new Promise((x) => setTimeout(x, 100)) } })()
  await Promise.all([flood, loop])
  console.log(JSON.stringify({ seconds: S, concurrency: C, wallets: W, strangers: Object.fromEntries(strangers), honestAgent: Object.fromEntries(honest) }))
} finally {
  await h.stop()
}
