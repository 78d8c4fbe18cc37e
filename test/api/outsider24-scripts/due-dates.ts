// outsider24: llms.txt's job registration says only "dueAt":"<ISO>": a first agent picks 30 days, or a time already
// past. What does it get? node --import tsx test/api/outsider24-scripts/due-dates.ts
import { call, fresh, fundJob, keys, net, report, signIn } from './doc.ts'

const M = 1_000_000n
for (const days of [30, -1, 9.9]) {
  const borrower = await fresh(0n)
  const client = await fresh(100n * M, keys.jobClient)
  const { jobId, fundingTxHash: h } = await fundJob(borrower, client, 100n * M)
  const r = await call('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt: new Date(Date.now() + days * 86400_000).toISOString(), fundingTxHash: h }, await signIn(borrower))
  console.log(`dueAt in ${days} days:`, r.status, r.body.code ?? r.body.state, r.body.detail ?? '')
}
report()
process.exit(0)
