// outsider27: collateral reported that is not the job's. A borrower with two jobs posts collateral of 10 on job 1 once
// and reports that posting twice on job 1 (two requests, no key), then on job 2; a second borrower reports it on its
// own job. Cost to the attacker: a sign-in and a job; the harm if any holds: collateral counted twice (or on another
// job, or for another borrower) raises capacity and risk band over tokens that secure only one job, and a band-A
// lender lends against collateral that is not there. Exits 1 if the service counts more than the 10 on job 1 or any on
// the others. URL=http://127.0.0.1:8402 node --import tsx test/api/outsider27-scripts/collateral-reports.ts
import type { PrivateKeyAccount } from 'viem/accounts'
import { call, fresh, keys, net, ok, send, signIn } from '../outsider24-scripts/doc.ts'

const M = 1_000_000n
const slug = net.slug
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const client = await fresh(300n * M, keys.jobClient)
async function job(borrower: PrivateKeyAccount, token: string): Promise<string> {
  const jobId = `job_${crypto.randomUUID()}`
  const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=USDC&receivableAtomic=${100n * M}&agent=${borrower.address}&client=${client.address}`)
  let fundingTxHash = ''
  for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
  await ok('POST', '/credit/jobs', { jobId, network: slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt: new Date(Date.now() + 7 * 86400_000).toISOString(), fundingTxHash }, token, 201)
  return jobId
}
const b1 = await fresh(10n * M)
const t1 = await signIn(b1)
const b2 = await fresh(0n)
const t2 = await signIn(b2)
const j1 = await job(b1, t1)
const j2 = await job(b1, t1)
const j3 = await job(b2, t2)
const c = await ok('GET', `/credit/jobs/${j1}/collateral-transactions?amountAtomic=${10n * M}`)
let h = ''
for (const tx of c.transactions) h = await send(b1, tx)
for (const [what, jobId, token] of [['on job 1', j1, t1], ['on job 1 again', j1, t1], ['on job 2 (same borrower)', j2, t1], ['on the other borrower\'s job', j3, t2]] as const) {
  const a = await call('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(10n * M), txHash: h }, token)
  console.log(what, '->', a.status, a.body?.code ?? a.body?.totalCollateralAtomic ?? '')
}
const collateral = async (jobId: string) => BigInt((await ok('GET', `/credit/jobs/${jobId}`)).collateralAtomic ?? 0)
const [c1, c2, c3] = [await collateral(j1), await collateral(j2), await collateral(j3)]
console.log('collateral counted:', c1, c2, c3)
if (c1 !== 10n * M) fail(`job 1 counts ${c1}`)
if (c2 !== 0n || c3 !== 0n) fail(`another job counts it: ${c2}, ${c3}`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: one posting counts once, on its job')
process.exit(bad.length ? 1 : 0)
