// outsider12: sign-ins whose signature does not recover to the address they name (what a contract wallet's, ERC-1271 or
// ERC-6492, looks like) are checked through the chain, from one share of the chain read budget that every such sign-in
// takes together. A stranger with no wallet, no gas and no session sends them with random addresses and junk signatures:
// what does a real contract wallet's sign-in get meanwhile? argv: url, seconds, requests per second.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
const [url = 'http://127.0.0.1:18412', secondsArg = '5', rateArg = '150'] = process.argv.slice(2)
const signer = privateKeyToAccount(generatePrivateKey())
async function unproven(): Promise<string> {
  const nonce = (await (await fetch(`${url}/auth/nonce`)).json()) as { nonce: string; domain: string; chainIds: number[] }
  const named = privateKeyToAccount(generatePrivateKey()).address
  const message = createSiweMessage({ domain: nonce.domain, address: named, uri: url, version: '1', chainId: nonce.chainIds[0]!, nonce: nonce.nonce, issuedAt: new Date() })
  const signature = await signer.signMessage({ message }) // a valid signature, of another key: not the named address's
  const reply = await fetch(`${url}/auth/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, signature }) })
  const body = (await reply.json()) as { code?: string }
  return `${reply.status} ${body.code ?? ''}`
}
const counts = new Map<string, number>()
const started = Date.now()
const seconds = Number(secondsArg), rate = Number(rateArg)
const inflight: Promise<void>[] = []
for (let i = 0; i < seconds * rate; i++) {
  const due = started + (i * 1000) / rate
  const wait = due - Date.now()
  if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  inflight.push(unproven().catch((e: Error) => `error ${(e.cause as Error)?.message ?? e.message}`).then((r) => void counts.set(r, (counts.get(r) ?? 0) + 1)))
}
await Promise.all(inflight)
console.log(`${seconds * rate} unproven sign-ins in ${((Date.now() - started) / 1000).toFixed(1)} s:`, Object.fromEntries(counts))
// What an honest contract wallet's sign-in meets now (the same path: a signature that does not recover to its address).
console.log('the next unproven sign-in:', await unproven())
