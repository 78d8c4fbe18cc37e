// Sign-in reads the chain only for a contract wallet, and that read is budgeted (src/service/chain-read-budget.ts):
// viem's automatic SIWE check made an eth_call to the ERC-6492 verifier on every sign-in, before anything was
// authenticated, so strangers with free wallets spent the operator's RPC quota, which the chain follower and the
// wallet watcher share, at the rate limit (an adversary's finding). The real service on a real devnet, whose first
// network is reached through a proxy that keeps every JSON-RPC request: a sign-in's chain reads are the requests that
// carry its message's hash.
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { hashMessage, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { startDevnet } from '../../src/chain/devnet.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { expectDocumented, expectProblem, openApiDocument } from '../api/fixtures/api.ts'
import { deployOwnerWallet } from '../fixtures/owner-wallet.ts'
import { fundedAccount, startHarness } from '../fixtures/service.ts'

// The smallest rate, so that no read of a wallet's share comes back while the sign-ins run; a share of 2.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

const devnet = await startDevnet()
const [first, ...others] = devnet.networks
if (first === undefined) throw new Error('the devnet has no network')

// The proxy in front of the first network's RPC: it forwards each request and keeps its body.
const rpcBodies: string[] = []
const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
const proxy = createServer((request, response) => {
  void (async () => {
    const body = await readBody(request)
    rpcBodies.push(body)
    const upstream = await fetch(first.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text())
  })().catch(() => response.destroy())
})
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
const network = { ...first, rpcUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` }

const h = await startHarness({ devnet: { ...devnet, networks: [network, ...others] }, config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] } })
t.teardown(async () => {
  await h.stop()
  proxy.closeAllConnections()
  await new Promise((resolve) => proxy.close(resolve))
  await devnet.stop()
})

/** The JSON-RPC requests that carried `message`'s hash: the chain reads of its sign-in. */
const readsOf = (message: string): number => {
  const hash = hashMessage(message).slice(2).toLowerCase()
  return rpcBodies.filter((body) => body.toLowerCase().includes(hash)).length
}

/** A SIWE message for `address` on the first network, with a fresh nonce of the service, signed by `signer`. */
async function signedMessage(address: Address, signer: PrivateKeyAccount): Promise<{ message: string; signature: Hex }> {
  const nonce = (await (await fetch(`${h.url}/auth/nonce`)).json()) as { nonce: string; domain: string }
  const message = createSiweMessage({ domain: nonce.domain, address, uri: `${h.url}/`, version: '1', chainId: network.chainId, nonce: nonce.nonce, issuedAt: new Date(), statement: 'Sign in to agent-credit' })
  return { message, signature: await signer.signMessage({ message }) }
}

// Each sign-in from a client address of its own (x-forwarded-for, the test's connection a trusted proxy): one address
// takes at most its part of the share (CLIENT_SHARE_DIVISOR, test/auth/outsider12-unproven-signins.test.ts), and
// this file checks the share all addresses take together.
let clients = 0
async function postSession(body: { message: string; signature: Hex }) {
  const headers = { 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${++clients}` }
  const response = await fetch(`${h.url}/auth/session`, { method: 'POST', headers, body: JSON.stringify(body) })
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> }
}

t.test('an EOA signs in without a chain read', async (t) => {
  const eoa = privateKeyToAccount(generatePrivateKey())
  const signed = await signedMessage(eoa.address, eoa)
  const reply = await postSession(signed)
  t.equal(reply.status, 201, 'signed in', { body: reply.body })
  t.equal(reply.body['address'], eoa.address)
  t.equal(readsOf(signed.message), 0, 'no JSON-RPC request carried the message\'s hash')
  const wrong = await signedMessage(eoa.address, privateKeyToAccount(generatePrivateKey()))
  expectProblem(t, await postSession(wrong), 401, 'siwe_signature_invalid', 'another key\'s signature, asked of the chain as a wallet\'s')
})

t.test('a contract wallet signs in through the chain, within the sign-ins\' share of the chain reads; past it 503 and the nonce stays usable', async (t) => {
  const document = await openApiDocument(h.url)
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = await deployOwnerWallet(network, await fundedAccount(h.devnet, network, 0n), owner.address)
  // The refused signature of the test above took one read of the share every unproven sign-in takes: it refills one
  // read in WALLET_SHARE_DIVISOR seconds at this rate (chainReadsPerSecond 1), and holds no more than WALLET_SHARE.
  await new Promise((resolve) => setTimeout(resolve, WALLET_SHARE_DIVISOR * 1000))
  const attempts = await Promise.all(Array.from({ length: WALLET_SHARE + 2 }, () => signedMessage(wallet, owner)))
  // At once, so that the share cannot refill in between.
  const replies = await Promise.all(attempts.map((signed) => postSession(signed)))
  const opened = replies.flatMap((reply, i) => (reply.status === 201 ? [attempts[i]!] : []))
  const refused = replies.flatMap((reply, i) => (reply.status === 503 ? [{ reply, signed: attempts[i]! }] : []))
  t.equal(opened.length, WALLET_SHARE, 'the wallet\'s share signed in (ERC-1271 checked on chain)')
  for (const signed of opened) t.ok(readsOf(signed.message) > 0, 'each read the chain')
  t.equal(refused.length, replies.length - WALLET_SHARE, 'every sign-in past the share was refused')
  for (const { reply, signed } of refused) {
    expectProblem(t, reply, 503, 'chain_reads_exhausted', 'past the share')
    t.match(reply.headers.get('retry-after'), /^[1-9]\d*$/, 'Retry-After in whole seconds')
    expectDocumented(t, document, 'post', '/auth/session', reply)
    t.equal(readsOf(signed.message), 0, 'nothing was read for it')
  }

  // An EOA's sign-in needs none of the budget meanwhile.
  const eoa = privateKeyToAccount(generatePrivateKey())
  t.equal((await postSession(await signedMessage(eoa.address, eoa))).status, 201, 'an EOA still signs in')

  // The refused message again, once the share refilled: its nonce was not used, and no session was opened for it.
  const retry = refused[0]!
  await new Promise((resolve) => setTimeout(resolve, Number(retry.reply.headers.get('retry-after')) * 1000))
  const again = await postSession(retry.signed)
  t.equal(again.status, 201, 'the same message signs in', { body: again.body })
  t.equal(again.body['address'], wallet)
  expectProblem(t, await postSession(retry.signed), 401, 'siwe_nonce_invalid', 'and its nonce is used now')
})
