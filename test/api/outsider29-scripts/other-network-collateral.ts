// outsider29: a job key is per contract and anyone may fund any key. After a borrower's job is registered on one
// network, a stranger funds the same key on the other network (later, so the registration stands), names itself the
// borrower there, posts collateral there and reports it against the registered job. The registered job's collateral
// must not move: no transaction on its own network proves it. Exits 1 while it does.
// URL=http://127.0.0.1:8472 node --import tsx test/api/outsider29-scripts/other-network-collateral.ts
import { keccak256, stringToBytes } from 'viem'
import { call, net, ok, signIn } from '../outsider24-scripts/doc.ts'
import { registeredJob, strangerOnOtherNetwork } from './setup.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }

const { bt, jobId } = await registeredJob(100n * M, 0n)
const before = await ok('GET', `/credit/jobs/${jobId}`)
console.log('job on', net.slug, 'collateral', before.collateralAtomic)

const { other, token, stranger, wallet, wait, abi } = await strangerOnOtherNetwork(30n * M)
const key = keccak256(stringToBytes(jobId))
await wait(await wallet.writeContract({ address: other.creditContract, abi, functionName: 'fundJob', args: [key, token, 1n, stranger.address] } as any))
const posted = await wait(await wallet.writeContract({ address: other.creditContract, abi, functionName: 'postCollateral', args: [key, token, 20n * M] } as any))
console.log('stranger on', other.slug, ': fundJob 1 atomic + postCollateral 20 USDC of the same key, gas + 20 USDC (its own, back at its reclaim)')
const st = await signIn(stranger as any)
const rep = await call('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(20n * M), txHash: posted }, st)
console.log('stranger reports it against the registered job ->', rep.status, rep.body?.code ?? '')
const repB = await call('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(20n * M), txHash: posted }, bt)
console.log('the borrower reports it ->', repB.status, repB.body?.code ?? '')
await new Promise((r) => setTimeout(r, 4000))
const after = await ok('GET', `/credit/jobs/${jobId}`)
console.log('job collateral after', after.collateralAtomic)
if (after.collateralAtomic !== before.collateralAtomic) fail(`the job on ${net.slug} counts ${after.collateralAtomic} of collateral posted on ${other.slug}`)
const reg = await call('POST', '/credit/jobs', { jobId, network: other.slug, asset: 'USDC', agent: stranger.address, receivableAtomic: '1', dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: posted }, st)
console.log('stranger registers the key on', other.slug, '->', reg.status, reg.body?.code ?? '')
console.log(bad.length ? `${bad.length} finding(s)` : 'holds')
process.exit(bad.length ? 1 : 0)
