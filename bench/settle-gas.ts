// Gas of CreditFacilityV2.settleJob against the number of a job's advances (the brief of branch `registrations`: was
// its duplicate check, a pairwise comparison of the offer keys, quadratic enough to matter? It was; the keys are now
// ascending and compared with their neighbour). One lender pays N
// advances of one whole unit each on one job; settleJob's gas is estimated for the N keys, and the fit
// gas = a + b*N + c*N^2 over the sizes separates the pairwise check (c) from the per-advance work (b). Anvil only.
// Run: npx tsx bench/settle-gas.ts [N ...] (default 1 50 150 300).
import type { Hex } from 'viem'
import { creditFacilityV2Abi } from '../src/chain/artifacts.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../src/chain/ids.ts'
import { ascendingKeys } from '../src/chain/operator.ts'
import { setupFacilityV2, USDC } from '../test/chain/fixtures/facility-v2.ts'

const sizes = process.argv.slice(2).map(Number)
const counts = sizes.length > 0 ? sizes : [1, 50, 150, 300]
const teardowns: (() => unknown)[] = []
const f = await setupFacilityV2({ teardown: (fn: () => unknown) => teardowns.push(fn) } as never)
const salt = newKeySalt()
let sequence = 0
const rows: { advances: number; gas: bigint }[] = []
try {
  for (const n of counts) {
    const escrow = BigInt(n) * 2n * USDC
    const client = await f.wallet(escrow)
    const borrower = await f.wallet(0n)
    const lender = await f.wallet(BigInt(n) * 2n * USDC)
    const jobKey = jobKeyOf(`settle_gas_${++sequence}`)
    await f.call(client, 'fundJob', [jobKey, f.token, escrow, borrower.account.address])
    const keys: Hex[] = []
    for (let i = 0; i < n; i++) {
      const now = await f.chainNow()
      const a = {
        offerKey: offerKeyOf(salt, `off_${++sequence}`), jobKey, payer: lender.account.address, supplier: client.account.address,
        asset: f.token, amount: USDC, fee: USDC / 10n, reserveShare: 0n, deadline: now + 600n, dueAt: now + 3_600n,
      }
      await f.call(lender, 'paySupplier', [a, f.authorize(a)])
      keys.push(a.offerKey)
    }
    const gas = await f.publicClient.estimateContractGas({ account: f.operator.account, address: f.facility, abi: creditFacilityV2Abi, functionName: 'settleJob', args: [jobKey, ascendingKeys(keys)] } as never)
    rows.push({ advances: n, gas })
    console.log(JSON.stringify({ advances: n, settleJobGas: Number(gas), perAdvance: Math.round(Number(gas) / n) }))
  }
} finally {
  for (const fn of teardowns.reverse()) await fn()
}
