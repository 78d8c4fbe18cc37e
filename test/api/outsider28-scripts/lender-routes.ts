// outsider28: a stranger (a fresh signed-in wallet, no funds) against a lender's terms and book position over HTTP:
// withdraw for it (any case of its address), replace its session key, read its actions, re-check its agent, register
// again under its address, report a random payment on its lease. Each must be refused (or change nothing); the lender's
// profile, wallet view and place in GET /lenders must be the same after. Cost to the stranger: one sign-in.
// Exits 1 if any attempt changes the lender or answers it with the lender's actions.
// URL=http://127.0.0.1:8471 node --import tsx test/api/outsider28-scripts/lender-routes.ts
import { call, fresh, ok, signIn } from '../outsider24-scripts/doc.ts'
import { lender } from './lender.ts'

const M = 1_000_000n
const bad: string[] = []
const L = await lender(20n * M, 20n * M, 7)
const addr = L.account.address
const snapshot = async () => JSON.stringify([await ok('GET', `/lenders/${addr}/wallet`), (await ok('GET', '/lenders?limit=1000')).find?.((x: any) => x.address === addr) ?? null])
const before = await snapshot()
const stranger = await fresh(0n)
const st = await signIn(stranger)
const attempts: [string, string, string, unknown][] = [
  ['withdraw for the lender', 'POST', `/lenders/${addr}/withdraw`, { amountAtomic: String(20n * M) }],
  ['withdraw for the lender, lower case', 'POST', `/lenders/${addr.toLowerCase()}/withdraw`, { amountAtomic: '1' }],
  ['replace the lender\'s session key', 'POST', `/lenders/${addr}/session-key`, {}],
  ['read the lender\'s actions', 'GET', `/lenders/${addr}/actions`, undefined],
  ['re-check the lender\'s agent', 'POST', `/lenders/${addr}/agent/recheck`, {}],
  ['register the stranger with the lender\'s terms', 'POST', '/lenders/register', { availableLiquidityAtomic: '1', asset: 'USDC', networks: ['devnet-a'], minFeeBps: 0, maxDurationSeconds: 1, acceptedRiskBands: ['A'] }],
]
for (const [what, method, path, body] of attempts) {
  const a = await call(method, path, body, st)
  console.log(`${what}: ${a.status} ${a.body?.code ?? ''}`)
  if (a.status < 300 && what !== 'register the stranger with the lender\'s terms') { bad.push(what); console.log('FINDING:', what, JSON.stringify(a.body).slice(0, 200)) }
}
const after = await snapshot()
if (before !== after) { bad.push('the lender changed'); console.log('FINDING: the lender changed\n', before, '\n', after) }
console.log(bad.length ? `${bad.length} finding(s)` : 'holds: the stranger changed nothing of the lender')
process.exit(bad.length ? 1 : 0)
