// outsider24: a backing source as llms.txt and the catalog's attestation describe it: the devnet attester signs the
// EIP-712 BackingSource (domain without chainId, as the catalog gives it), the borrower registers it and requests
// credit against it. node --import tsx test/api/outsider24-scripts/backing-source.ts
import { privateKeyToAccount } from 'viem/accounts'
import { call, catalog, fresh, net, ok, report, signIn } from './doc.ts'

const attester = privateKeyToAccount('0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e')
const borrower = await fresh(0n)
const bt = await signIn(borrower)
const validUntil = new Date(Date.now() + 30 * 86400_000)
const source = { sourceId: `src-${crypto.randomUUID()}`, productType: 'asset-backed', agent: borrower.address, valueAtomic: '1000000000', liquidationValueAtomic: '800000000', advanceRateBps: 5000 }
const a = catalog.attestation
const evidenceId = await attester.signTypedData({ domain: a.domain, types: a.types, primaryType: a.primaryType, message: { service: a.service, ...source, valueAtomic: BigInt(source.valueAtomic), liquidationValueAtomic: BigInt(source.liquidationValueAtomic), validUntil: BigInt(Math.floor(validUntil.getTime() / 1000)) } })
const r = await call('POST', '/credit/backing-sources', { ...source, validUntil: validUntil.toISOString(), evidenceId }, bt)
console.log('register:', r.status, JSON.stringify(r.body).slice(0, 400))
const supplier = (await ok('GET', '/suppliers'))[0]
const q = await call('POST', '/credit/request', { agent: borrower.address, network: net.slug, asset: 'USDC', productType: 'asset-backed', amountAtomic: '100000000', purpose: 'inference', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: source.sourceId, maximumFeeAtomic: '10000000' }, bt)
console.log('request:', q.status, JSON.stringify(q.body).slice(0, 400))
report()
process.exit(0)
