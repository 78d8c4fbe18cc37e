// outsider24: the routes the flows do not reach, each answer validated against /openapi.json (doc.ts): discovery,
// health, the facilitator's supported kinds, the inspector's JSON routes, the operator's supplier directory and
// reconciliation (the devnet operator key of llms.txt), sessions. node --import tsx test/api/outsider24-scripts/sweep.ts
import { privateKeyToAccount } from 'viem/accounts'
import { base, call, fresh, report, signIn } from './doc.ts'

const operator = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d')
const ot = await signIn(operator)
const paths = ['/health', '/.well-known/service.json', '/openapi.json', '/llms.txt', '/auth/nonce', '/credit/state', '/credit/backing-sources', '/suppliers', '/lenders', '/lenders/wallets', '/x402/devnet-b-facilitator/supported', '/inspect/counts', '/inspect/transitions', '/inspect/actors/off_1', '/inspect/actors/nope', '/events', `/credit/held-payments/${operator.address}`, `/passport/${operator.address}`, `/lenders/${operator.address}/wallet`, `/lenders/${operator.address}/agent`, '/credit/jobs/job_nope', '/credit/offers/off_1', '/credit/advances/adv_1']
for (const p of paths) { const a = await call('GET', p); console.log('GET', p, a.status) }
// HEAD is every GET's (README), not an operation of its own in the document.
for (const p of ['/credit/state', '/lenders']) { const a = await fetch(base + p, { method: 'HEAD' }); console.log('HEAD', p, a.status) }
console.log('PUT supplier', (await call('PUT', '/suppliers/o24.example', { name: 'o24', addresses: { 'devnet-a': ['0x000000000000000000000000000000000000dEaD'] } }, ot)).status)
console.log('GET supplier list', (await call('GET', '/suppliers')).status)
console.log('DELETE supplier', (await call('DELETE', '/suppliers/o24.example', undefined, ot)).status)
console.log('reconcile', (await call('POST', '/operator/reconcile', undefined, ot)).status)
console.log('reconcile by stranger', (await call('POST', '/operator/reconcile', undefined, await signIn(await fresh(0n)))).status)
const t2 = await signIn(await fresh(0n))
console.log('refresh', (await call('POST', '/auth/session/refresh', undefined, t2)).status)
console.log('DELETE sessions', (await call('DELETE', '/auth/sessions', undefined, t2)).status)
console.log('credit-score unpaid', (await call('POST', '/credit-score', { subject: operator.address, publicKey: { kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo' } })).status)
report()
process.exit(0)
