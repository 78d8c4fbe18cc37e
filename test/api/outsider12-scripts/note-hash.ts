// outsider12: /fail's noteHash is the keccak256 of which bytes? A note that is not NFC (e + combining acute), a note with
// a lone surrogate, and 500 astral characters.
import { keccak256, stringToBytes } from 'viem'
import { devnetOf, freshAgent, registeredJob } from '../fixtures/outsider12-agent.ts'
const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const { net, key } = await devnetOf(url)
for (const note of ['e\u0301', '\ud800x', '\u{1F600}'.repeat(500), '\u{1F600}'.repeat(501)]) {
  const borrower = await freshAgent(url, net, key, 'borrower', 0n)
  const client = await freshAgent(url, net, key, 'jobClient', 1_000_000n)
  const jobId = await registeredJob(client, borrower, net, 1_000_000n)
  const failed = await client.post(`/credit/jobs/${jobId}/fail`, { reason: 'other', note })
  console.log(JSON.stringify(note.slice(0, 6)), `(${note.length} UTF-16 units)`, failed.status, failed.body.code ?? '', failed.body.noteHash === keccak256(stringToBytes(note)) ? 'noteHash = keccak256(utf8(note))' : `noteHash ${failed.body.noteHash} vs ${keccak256(stringToBytes(note))}`)
}
