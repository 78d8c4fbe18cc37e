// outsider12: /fail's noteHash is the keccak256 of which bytes? A note that is not NFC (e + combining acute), a note with
// a lone surrogate, and 500 astral characters.
import { randomUUID } from 'node:crypto'
import { keccak256, stringToBytes } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent, give, sendUnsigned, type CatalogNetwork, type Json } from '../fixtures/outsider12-agent.ts'
const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const catalog = (await (await fetch(`${url}/.well-known/service.json`)).json()) as Json
const llms = await (await fetch(`${url}/llms.txt`)).text()
const net = catalog['networks'][0] as CatalogNetwork
const keyOf = (role: string) => new RegExp(`- ${role}: 0x[0-9a-fA-F]{40} \\(private key (0x[0-9a-f]{64})\\)`).exec(llms)![1] as `0x${string}`
const deployer = privateKeyToAccount(keyOf('deployer'))
for (const note of ['e\u0301', '\ud800x', '\u{1F600}'.repeat(500), '\u{1F600}'.repeat(501)]) {
  const borrower = new Agent(url, privateKeyToAccount(generatePrivateKey())), client = new Agent(url, privateKeyToAccount(generatePrivateKey()))
  for (const a of [borrower, client]) await give(net, deployer, a.address, 10n ** 18n, 0n)
  await give(net, privateKeyToAccount(keyOf('jobClient')), client.address, 0n, 1_000_000n)
  await Promise.all([borrower.signIn(), client.signIn()])
  const jobId = `job_${randomUUID()}`
  let fundingTxHash = ''
  for (const tx of (await client.get(`/credit/jobs/${jobId}/funding-transactions?network=${net.slug}&asset=USDC&receivableAtomic=1000000&agent=${borrower.address}&client=${client.address}`)).body.transactions) fundingTxHash = (await sendUnsigned(net, client.account, tx)).hash
  await borrower.post('/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: '1000000', dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash })
  const failed = await client.post(`/credit/jobs/${jobId}/fail`, { reason: 'other', note })
  console.log(JSON.stringify(note.slice(0, 6)), `(${note.length} UTF-16 units)`, failed.status, failed.body.code ?? '', failed.body.noteHash === keccak256(stringToBytes(note)) ? 'noteHash = keccak256(utf8(note))' : `noteHash ${failed.body.noteHash} vs ${keccak256(stringToBytes(note))}`)
}
