// What a free wallet's keyed lender withdrawals cost the store (branch `outsider9`, an outsider's finding): one fresh
// wallet signs in and registers a lender of 2^128-1 liquidity, never funded; then N withdrawals of 1 atomic unit, each
// with a fresh Idempotency-Key, and N more without a key, over HTTP against the real service and the embedded devnet,
// in process. Each keyed one changes the lender's policy, so its answer is stored for idempotencyRetentionSeconds
// (24 h); the unkeyed ones rewrite the same lender record. Reports the LMDB pages in use per withdrawal, each way, with
// the bounds on keyed requests lifted (test/fixtures/service.ts testConfig); then, against a second service with the
// default bounds, how many keyed withdrawals the same wallet gets before 429 idempotency_keys_limited.
// Run: node --import tsx bench/withdraw-idempotency-cost.ts [N] (default 3000).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { pagesInUse as pagesOf } from './fixtures/store-cost.ts'
import { serviceDefaults } from '../src/app/config.ts'
import type { CreditClient } from '../src/client/client.ts'
import { signedIn, startHarness, USDC, type Harness } from '../test/fixtures/service.ts'

const N = Number(process.argv[2] ?? 3000)
const h = await startHarness({})
const pagesInUse = (): Promise<number> => pagesOf(h.dataDir)

/** A fresh wallet, signed in and registered as a lender of 2^128-1, never funded; its withdrawal path. */
const unfundedLender = async (on: Harness): Promise<{ client: CreditClient; path: string }> => {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(on.url, account)
  const reply = await client.post('/lenders/register', { availableLiquidityAtomic: ((1n << 128n) - 1n).toString(), asset: USDC, networks: [on.network.slug], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A'] })
  if (reply.status !== 201) throw new Error(`register: ${reply.status}`)
  return { client, path: `/lenders/${account.address}/withdraw` }
}

try {
  const { client, path } = await unfundedLender(h)
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
  const bounded = await startHarness({ config: { keyedRequestsPerWalletPerHour: serviceDefaults.keyedRequestsPerWalletPerHour, keyedRequestsPerClientPerHour: serviceDefaults.keyedRequestsPerClientPerHour, keyedRequestsPerHour: serviceDefaults.keyedRequestsPerHour } })
  const oneWallet = { admitted: 0, refusedWith: null as number | null }
  try {
    const lender = await unfundedLender(bounded)
    for (let i = 0; i < 100_000 && oneWallet.refusedWith === null; i++) {
      const w = await lender.client.call('POST', lender.path, { amountAtomic: '1' }, { idempotencyKey: `w-${i}` })
      if (w.status === 200) oneWallet.admitted++
      else oneWallet.refusedWith = w.status
    }
  } finally {
    await bounded.stop()
  }
  console.log(JSON.stringify({ withdrawals: N, unkeyed, keyed, atDefaultBounds: { oneWallet } }))
} finally {
  await h.stop()
}
