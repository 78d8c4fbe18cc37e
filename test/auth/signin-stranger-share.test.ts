// A sign-in's signature that does not recover to its SIWE address is checked on chain, and that read is budgeted
// (src/service/chain-read-budget.ts). Before the check the address is only what the message claims: anyone can send a
// message naming any wallet with a signature of their own. Charged to the named wallet's share, a stranger with no
// session at all spent a victim's share at will, and the victim's own reads were refused: here its job registration,
// which takes one read of the caller's own share (src/service/borrowers.ts). Such reads now come from one share that
// every unproven sign-in takes together (ChainReadBudget.takeUnproven), never a wallet's own. A review's finding: on
// the old code the registration answers 503 chain_reads_exhausted. The real service on a real devnet.
import t from 'tap'
import { type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { ChainAgent } from '../../src/client/chain.ts'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { expectProblem, until } from '../api/fixtures/api.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'

// The smallest rate, so that no read of a share comes back while the test runs; a share of 2.
const BURST = 8
const WALLET_SHARE = BURST / WALLET_SHARE_DIVISOR

const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST } })
t.teardown(() => h.stop())

/** A SIWE message naming `address`, with a fresh nonce of the service, signed by `signer`. */
async function signedMessage(address: Address, signer: PrivateKeyAccount): Promise<{ message: string; signature: Hex }> {
  const nonce = (await (await fetch(`${h.url}/auth/nonce`)).json()) as { nonce: string; domain: string }
  const message = createSiweMessage({ domain: nonce.domain, address, uri: `${h.url}/`, version: '1', chainId: h.network.chainId, nonce: nonce.nonce, issuedAt: new Date(), statement: 'Sign in to agent-credit' })
  return { message, signature: await signer.signMessage({ message }) }
}

async function postSession(body: { message: string; signature: Hex }) {
  const response = await fetch(`${h.url}/auth/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> }
}

t.test('a stranger\'s sign-ins naming a wallet spend none of that wallet\'s own share', async (t) => {
  // A job funded for the victim, read by the follower: its registration takes one read of the victim's own share.
  const victim = await fundedAccount(h.devnet, h.network, 0n)
  const clientAccount = await fundedAccount(h.devnet, h.network, usdc(100))
  const fundingTx = await new ChainAgent(h.network, clientAccount).fundJob('job_named_victim', USDC, usdc(100), victim.address)
  const funded = await new ChainAgent(h.network, clientAccount).publicClient.getTransactionReceipt({ hash: fundingTx })
  await until(() => (h.app.service.appliedChainBlocks.get(h.network.slug) ?? -1n) >= funded.blockNumber, 20_000, 'the follower past the funding')
  const api = await signedIn(h.url, victim)

  // No session, no wallet of the victim's: messages naming it, signed by the stranger's key, at once.
  const stranger = privateKeyToAccount(generatePrivateKey())
  const forged = await Promise.all(Array.from({ length: WALLET_SHARE + 2 }, () => signedMessage(victim.address, stranger)))
  const replies = await Promise.all(forged.map((signed) => postSession(signed)))
  for (const reply of replies) t.not(reply.status, 201, 'no session for the stranger')
  t.ok(replies.some((reply) => reply.status === 503), 'the sign-ins\' share was spent')

  const registration = await api.post('/credit/jobs', {
    jobId: 'job_named_victim', network: h.network.slug, asset: USDC, agent: victim.address, receivableAtomic: usdc(100).toString(),
    dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: fundingTx,
  })
  t.equal(registration.status, 201, `the victim registers its job: ${JSON.stringify(registration.body)}`)
  t.match(registration.body, { jobId: 'job_named_victim', borrower: victim.address })
})

t.test('unproven sign-ins naming distinct wallets take one share together; an EOA\'s takes none', async (t) => {
  // Fresh addresses each, at once: the share holds at most WALLET_SHARE reads, whatever addresses are named.
  const forged = await Promise.all(Array.from({ length: WALLET_SHARE + 1 }, async () => {
    const named = privateKeyToAccount(generatePrivateKey())
    return postSession(await signedMessage(named.address, privateKeyToAccount(generatePrivateKey())))
  }))
  const refused = forged.filter((reply) => reply.status === 503)
  t.ok(refused.length > 0, 'past the share, refused')
  for (const reply of refused) expectProblem(t, reply, 503, 'chain_reads_exhausted', 'an unproven sign-in, whatever address it names')
  const wallet = privateKeyToAccount(generatePrivateKey())
  const eoa = await postSession(await signedMessage(wallet.address, wallet))
  t.equal(eoa.status, 201, 'an EOA\'s sign-in takes no read', { body: eoa.body })
})
