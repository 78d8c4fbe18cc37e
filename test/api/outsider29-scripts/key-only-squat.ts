// outsider29: a job id belongs to its earliest funding on any network (409 job_id_funded_elsewhere), and that funding
// is read by key alone: getJob(keccak256(jobId)) on the other network, in any token, of any amount, registered or not.
// fundJob's calldata carries only the key, never the id, so a stranger who sees a client's fundJob before it is mined
// (a public mempool; here: the client's signed transaction, held back as a mempool would show it) funds that key on
// the other network first, for gas and 1 atomic unit, without ever knowing the id, and the honest borrower's
// registration is refused for good: the borrower gets no credit on the job and the client's escrow waits out the
// reclaim delay (10 days on the devnet). Exits 1 while the honest registration is refused. Closed by jobkey30: the
// served fundJob carries the job's key on its network (keccak256(abi.encodePacked(chainId, creditContract, jobId))),
// which says nothing of the id's keys on the other network, so the stranger's funding there takes nothing and the
// honest registration is 201 (exit 0; test/api/jobkey30-key-per-network.test.ts).
// URL=http://127.0.0.1:8472 node --import tsx test/api/outsider29-scripts/key-only-squat.ts
import { createWalletClient, decodeFunctionData, http } from 'viem'
import { call, catalog, chain, fresh, keys, net, ok, pub, send, signIn } from '../outsider24-scripts/doc.ts'
import { strangerOnOtherNetwork } from './setup.ts'

const M = 1_000_000n
const bad: string[] = []
const fail = (s: string) => { bad.push(s); console.log('FINDING:', s) }
const abi = catalog.contracts.creditFacility.abi

// The stranger, ready on the other network: gas and 1 atomic unit.
const { other, token, wallet, wait } = await strangerOnOtherNetwork(1n)

// The honest client funds a job for the honest borrower, with the served approve + fundJob (llms.txt).
const borrower = await fresh(0n)
const bt = await signIn(borrower)
const client = await fresh(100n * M, keys.jobClient)
const jobId = `job_${crypto.randomUUID()}`
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${net.slug}&asset=USDC&receivableAtomic=${100n * M}&agent=${borrower.address}&client=${client.address}`)
const [approve, fund] = ft.transactions
await send(client, approve)
// The fundJob as it would wait in a public mempool: signed, not yet mined. The stranger reads its calldata: a key, no id.
const signed = await createWalletClient({ account: client, chain, transport: http() }).signTransaction(await createWalletClient({ account: client, chain, transport: http() }).prepareTransactionRequest({ to: fund.to, data: fund.data, gas: BigInt(fund.gas) }) as any)
const { args } = decodeFunctionData({ abi, data: fund.data }) as any
const seenKey = args[0] as `0x${string}`
console.log('stranger sees a pending fundJob with key', seenKey, '(the id is nowhere in it)')
await wait(await wallet.writeContract({ address: other.creditContract, abi, functionName: 'fundJob', args: [seenKey, token, 1n, wallet.account.address] } as any))
console.log(`stranger: fundJob(key, 1 atomic unit) on ${other.slug} (gas + 1 unit, reclaimable)`)
await new Promise((r) => setTimeout(r, 1500))
const fundingTxHash = await pub.sendRawTransaction({ serializedTransaction: signed })
const rec = await pub.waitForTransactionReceipt({ hash: fundingTxHash })
console.log('the client\'s fundJob mined on', net.slug, rec.status)
const reg = await call('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(100n * M), dueAt: new Date(Date.now() + 2 * 86400_000).toISOString(), fundingTxHash }, bt)
console.log('the borrower registers the job ->', reg.status, reg.body?.code ?? '', (reg.body?.detail ?? '').slice(0, 200))
if (reg.status === 409 && reg.body?.code === 'job_id_funded_elsewhere') fail(`a stranger who never knew the id took it with a funding of its key on ${other.slug} (1 atomic unit): the honest job is refused, its escrow of 100 USDC idle until the reclaim delay`)
console.log(bad.length ? `${bad.length} finding(s)` : 'holds')
process.exit(bad.length ? 1 : 0)
