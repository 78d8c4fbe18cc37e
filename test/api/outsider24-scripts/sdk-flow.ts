// outsider24: the same two flows through the SDK as the README shows it (AgentCredit, ChainAgent, runLender), with
// collateral, a direct repayment and the lender's whole withdrawal; every stream message of both wallets is validated
// against the StreamMessage schema of /openapi.json. Run against a fresh `npm start` (its lenders would compete).
// URL=http://127.0.0.1:8463 node --import tsx test/api/outsider24-scripts/sdk-flow.ts
import { AgentCredit, ChainAgent, type AdvanceView } from '../../../src/client/index.ts'
import { privateKeyToAccount } from 'viem/accounts'
import { base, finding, fresh, keys, report, validate } from './doc.ts'

const M = 1_000_000n
const lenderKey = await fresh(0n), borrowerKey = await fresh(410n * M, keys.borrower), clientKey = await fresh(2000n * M, keys.jobClient)
const [lender, borrower, client] = [lenderKey, borrowerKey, clientKey].map((account) => new AgentCredit({ baseUrl: base, account }))
const [{ networks: [net] }, [supplier]] = await Promise.all([lender!.catalog(), lender!.suppliers()])
const onChain = (account: typeof lenderKey) => ChainAgent.fromCatalog(net!, account)
// The lender's own wallet needs USDC to fund its session wallet (setupSessionWallet sends it from the owner).
await onChain(privateKeyToAccount(keys.lender)).transferToken('USDC', lenderKey.address, 500n * M)

const reg = await lender!.registerLender({ availableLiquidityAtomic: String(500n * M), asset: 'USDC', networks: [net!.slug], minFeeBps: 250, maxDurationSeconds: 2_592_000, acceptedRiskBands: ['A', 'B'] })
const session = onChain(privateKeyToAccount(reg.sessionKey.privateKey as `0x${string}`))
await lender!.setupSessionWallet(reg, onChain(lenderKey), session, 'USDC', 500n * M)
const paid = new Promise<AdvanceView>((resolve, reject) => void lender!.runLender(session, { onPaid: resolve, onError: reject }))
const lenderStream = await lender!.events()
lenderStream.on((m) => validate('StreamMessage', m, `lender stream ${(m as any).kind ?? m.type}`))
const borrowerStream = await borrower!.events()
const kinds: string[] = []
borrowerStream.on((m) => { kinds.push(`${m.type}:${(m as any).kind ?? ''}`); validate('StreamMessage', m, `borrower stream ${(m as any).kind ?? m.type}`) })

const jobId = `job_${crypto.randomUUID()}`
const dueAt = new Date(Date.now() + 7 * 86_400_000).toISOString()
await borrower!.fundJob(onChain(clientKey), { jobId, network: net!.slug, asset: 'USDC', agent: borrowerKey.address, receivableAtomic: String(2000n * M), dueAt })
await borrower!.postCollateralOnChain(onChain(borrowerKey), jobId, 300n * M)
// The session wallet enters the book once the watcher saw it holding the least advance.
for (let i = 0; i < 60 && BigInt((await lender!.wallet(lenderKey.address)).activity.availableAtomic) === 0n; i++) await new Promise((r) => setTimeout(r, 500))
const { decision, match } = await borrower!.requestAndMatch({ agent: borrowerKey.address, network: net!.slug, asset: 'USDC', productType: 'job', amountAtomic: String(100n * M), purpose: 'inference', supplier: supplier!.name, supplierDomain: supplier!.domain, repaymentSource: jobId, maximumFeeAtomic: String(10n * M) })
console.log('decision', decision.decision, 'lease', match?.lease?.lender === lenderKey.address)
const advance = await paid
console.log('advance', advance.advanceId, advance.state)
const receipt = await borrower!.repay(onChain(borrowerKey), advance.advanceId)
console.log('repaid', receipt.repaid ?? receipt, (await borrower!.advance(advance.advanceId)).state)

// The lender withdraws everything, as the withdraw route's schema says: available + reserved + deployed + losses.
const w = (await lender!.wallet(lenderKey.address)).activity
const all = BigInt(w.policyAvailableAtomic) + BigInt(w.reservedAtomic) + BigInt(w.deployedAtomic) + BigInt(w.lossesAtomic)
const out = await lender!.withdraw(all)
for (const a of out.actions) if (a.kind === 'withdraw') await session.sendUnsigned(a.transaction)
const after = await session.balanceOf('USDC', session.account.address)
console.log('session wallet after withdraw', after, 'lender', await session.balanceOf('USDC', lenderKey.address))
if (after !== 0n) finding(`session wallet keeps ${after} after withdrawing all`)
await new Promise((r) => setTimeout(r, 1500))
console.log('borrower stream kinds', [...new Set(kinds)].join(' '))
lenderStream.close(); borrowerStream.close()
report()
process.exit(0)
