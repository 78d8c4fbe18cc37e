// What a free wallet's keyed lender withdrawals cost the store (branch `outsider9`, an outsider's finding): one fresh
// wallet signs in and registers a lender of 2^128-1 liquidity, never funded; then N withdrawals of 1 atomic unit, each
// with a fresh Idempotency-Key, and N more without a key, over HTTP against the real service and the embedded devnet,
// in process. Each keyed one changes the lender's policy, so its answer is stored for idempotencyRetentionSeconds
// (24 h); the unkeyed ones rewrite the same lender record. Reports the LMDB pages in use per withdrawal, each way.
// Run: node --import tsx bench/withdraw-idempotency-cost.ts [N] (default 3000).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { pagesInUse as pagesOf } from './fixtures/store-cost.ts'
import { signedIn, startHarness, USDC } from '../test/fixtures/service.ts'

const N = Number(process.argv[2] ?? 3000)
const h = await startHarness({})
const pagesInUse = (): Promise<number> => pagesOf(h.dataDir)
try {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  const reply = await client.post('/lenders/register', { availableLiquidityAtomic: ((1n << 128n) - 1n).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A'] })
  if (reply.status !== 201) throw new Error(`register: ${reply.status}`)
  const path = `/lenders/${account.address}/withdraw`
  const run = async (keyed: boolean): Promise<{ bytesPerWithdrawal: number; withdrawalsPerSecond: number }> => {
    const before = await pagesInUse()
    const t0 = performance.now()
    for (let i = 0; i < N; i++) {
      const w = await client.call('POST', path, { amountAtomic: '1' }, keyed ? { idempotencyKey: `w-${i}` } : {})
      if (w.status !== 200) throw new Error(`withdraw: ${w.status}`)
    }
    const perSecond = N / ((performance.now() - t0) / 1000)
    return { bytesPerWithdrawal: Math.round(((await pagesInUse()) - before) / N), withdrawalsPerSecond: Math.round(perSecond) }
  }
  const unkeyed = await run(false)
  const keyed = await run(true)
  console.log(JSON.stringify({ withdrawals: N, unkeyed, keyed }))
} finally {
  await h.stop()
}
