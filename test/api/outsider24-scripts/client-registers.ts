// outsider24: "the borrower (or the client with the borrower's consent) registers the job" (llms.txt): the client
// registers it with borrowerConsent, signed once with the catalog's consent domain as given ({name, version}) and
// once with the chainId and verifyingContract the OpenAPI field's description adds. node --import tsx ...
import { call, catalog, fresh, keys, net, ok, report, send, signIn } from './doc.ts'

const M = 1_000_000n
const borrower = await fresh(0n)
const client = await fresh(1000n * M, keys.jobClient)
const jobId = `job_${crypto.randomUUID()}`
const dueAt = new Date(Math.floor(Date.now() / 1000 + 7 * 86400) * 1000)
const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${net.slug}&asset=USDC&receivableAtomic=${1000n * M}&agent=${borrower.address}&client=${client.address}`)
let fundingTxHash = ''
for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
const ct = await signIn(client)
const c = catalog.consent
const message = { jobId, network: net.slug, asset: 'USDC', receivableAtomic: 1000n * M, client: client.address, dueAt: BigInt(dueAt.getTime() / 1000) }
const body = (borrowerConsent: string) => ({ jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(1000n * M), dueAt: dueAt.toISOString(), fundingTxHash, borrowerConsent })
const asGiven = await borrower.signTypedData({ domain: c.domain, types: c.types, primaryType: c.primaryType, message })
const r1 = await call('POST', '/credit/jobs', body(asGiven), ct)
console.log('catalog domain as given:', r1.status, r1.body.code ?? r1.body.state, r1.body.detail ?? '')
const full = await borrower.signTypedData({ domain: { ...c.domain, chainId: net.chainId, verifyingContract: net.creditContract }, types: c.types, primaryType: c.primaryType, message })
const r2 = await call('POST', '/credit/jobs', body(full), ct)
console.log('with chainId and verifyingContract:', r2.status, r2.body.code ?? r2.body.state, r2.body.detail ?? '')
report()
process.exit(0)
