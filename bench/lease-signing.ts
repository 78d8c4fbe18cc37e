// Cost of one lease authorization (digest + signature) with the service's LeaseSigner against viem's signTypedData,
// in one run on the same inputs, so that the ratios hold on a noisy shared machine. Writes
// bench/results/lease-signing-latest.json. `npx tsx bench/lease-signing.ts [--iterations N]`.
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { hashTypedData, zeroHash, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { offerKey, newKeySalt, legacyJobKey } from '../src/chain/ids.ts'
import { leaseAuthorizationTypes, leaseDomain, LeaseSigner, nativeStatus, type LeaseAuthorization } from '../src/chain/lease-authorization.ts'

const here = dirname(fileURLToPath(import.meta.url))
const iterationsArg = process.argv.indexOf('--iterations')
const iterations = iterationsArg > 0 ? Number(process.argv[iterationsArg + 1]) : 2_000
const rounds = 7

const privateKey = generatePrivateKey()
const account = privateKeyToAccount(privateKey)
const contract = '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Address
const chainId = 8453
const native = new LeaseSigner({ privateKey, chainId, verifyingContract: contract })
const fallback = new LeaseSigner({ privateKey, chainId, verifyingContract: contract, implementation: 'javascript' })
const domain = leaseDomain(chainId, contract)

// Distinct terms per call, as the service signs distinct leases (no cache can help).
const salt = newKeySalt()
const inputs: LeaseAuthorization[] = Array.from({ length: iterations }, (_, i) => ({
  offerKey: offerKey(salt, `off_${i}`),
  jobKey: i % 4 === 0 ? zeroHash : legacyJobKey(`job_${i}`),
  payer: privateKeyToAccount(generatePrivateKey()).address,
  supplier: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  amount: BigInt(1_000_000 + i),
  fee: BigInt(10_000 + i),
  reserveShare: BigInt(1_000 + i),
  deadline: 1_900_000_000n + BigInt(i),
  dueAt: 1_900_086_400n + BigInt(i),
}))

type Case = { name: string; run: (a: LeaseAuthorization) => unknown }
const cases: Case[] = [
  { name: 'viem signTypedData (hash + noble sign)', run: (a) => account.signTypedData({ domain, types: leaseAuthorizationTypes, primaryType: 'LeaseAuthorization', message: a }) },
  { name: 'viem hashTypedData (digest only)', run: (a) => hashTypedData({ domain, types: leaseAuthorizationTypes, primaryType: 'LeaseAuthorization', message: a }) },
  { name: 'hand-rolled digest, JavaScript keccak (the keccak package)', run: (a) => fallback.digest(a) },
  { name: 'hand-rolled digest, native keccak', run: (a) => native.digest(a) },
  { name: 'hand-rolled digest + noble sign (viem sign)', run: (a) => sign({ hash: fallback.digest(a), privateKey, to: 'hex' }) },
  { name: 'LeaseSigner, native (libkeccak + libsecp256k1)', run: (a) => native.sign(a) },
  { name: 'LeaseSigner, JavaScript fallback (keccak package + elliptic)', run: (a) => fallback.sign(a) },
]

async function measure(c: Case): Promise<number> {
  // viem's sign functions are async (they resolve at once); awaiting each keeps the cost comparable.
  for (const a of inputs.slice(0, 200)) await c.run(a)
  const perRound: number[] = []
  for (let r = 0; r < rounds; r++) {
    const started = process.hrtime.bigint()
    for (const a of inputs) await c.run(a)
    perRound.push(Number(process.hrtime.bigint() - started) / 1_000 / inputs.length)
  }
  perRound.sort((x, y) => x - y)
  return perRound[Math.floor(rounds / 2)] as number
}

const results: { name: string; microsPerAuthorization: number }[] = []
for (const c of cases) {
  const micros = await measure(c)
  results.push({ name: c.name, microsPerAuthorization: Math.round(micros * 10) / 10 })
  process.stdout.write(`${c.name.padEnd(58)} ${micros.toFixed(1).padStart(8)} us\n`)
}
const byName = (prefix: string) => results.find((r) => r.name.startsWith(prefix))?.microsPerAuthorization as number
const viem = byName('viem signTypedData')
const ours = byName('LeaseSigner, native')
const summary = {
  date: new Date().toISOString(),
  iterations,
  rounds,
  native: nativeStatus(),
  results,
  ratios: {
    viemSignTypedDataToLeaseSigner: Math.round((viem / ours) * 10) / 10,
    viemHashTypedDataToHandRolledDigest: Math.round((byName('viem hashTypedData') / byName('hand-rolled digest, native')) * 10) / 10,
    javascriptKeccakToNative: Math.round((byName('hand-rolled digest, JavaScript') / byName('hand-rolled digest, native')) * 10) / 10,
    fallbackToNative: Math.round((byName('LeaseSigner, JavaScript fallback') / ours) * 10) / 10,
  },
}
process.stdout.write(`LeaseSigner is ${summary.ratios.viemSignTypedDataToLeaseSigner}x faster than viem signTypedData (${JSON.stringify(summary.native)})\n`)
writeFileSync(join(process.env.BENCH_RESULTS_DIR ?? join(here, 'results'), 'lease-signing-latest.json'), JSON.stringify(summary, null, 2) + '\n')
