// outsider12: a sign-in whose signature does not recover to the address it names (a contract wallet's, ERC-1271 or
// ERC-6492) is checked through the chain, from one share of the network's chain read budget that every such sign-in
// takes together (test/auth/signin-stranger-share.test.ts). Nothing bounds who spends it: a stranger with no wallet, no
// gas and no session sends sign-ins naming random addresses with a signature of its own key (a nonce is free), and
// each refused one (401, "costs nothing" of the sign-in buckets) took a read of the share; at the defaults (400 reads a
// second, a share of 100) one client address sending more than 100 a second, well within its 2,000 requests a second,
// keeps every contract wallet's sign-in refused 503 chain_reads_exhausted, for as long as it goes on (on the devnet,
// loaded: test/api/outsider12-scripts/unproven-signins.ts). Agents commonly hold smart-contract accounts; a lender
// whose session ends cannot open another, and its stream and leases stop. Here, at the smallest budget, a stranger's
// client address empties the share and another client's contract wallet is refused: it should not be (one client
// address should not spend what every client's contract wallets need). Fails on 04104a7.
import t from 'tap'
import { type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { WALLET_SHARE_DIVISOR } from '../../src/service/chain-read-budget.ts'
import { deployOwnerWallet } from '../fixtures/owner-wallet.ts'
import { fundedAccount, startHarness } from '../fixtures/service.ts'

const BURST = 8
const SHARE = BURST / WALLET_SHARE_DIVISOR

const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] } })
t.teardown(() => h.stop())

async function signIn(address: Address, signer: PrivateKeyAccount, from: string): Promise<{ status: number; code?: string }> {
  const nonce = (await (await fetch(`${h.url}/auth/nonce`)).json()) as { nonce: string; domain: string }
  const message = createSiweMessage({ domain: nonce.domain, address, uri: `${h.url}/`, version: '1', chainId: h.network.chainId, nonce: nonce.nonce, issuedAt: new Date() })
  const signature: Hex = await signer.signMessage({ message })
  const response = await fetch(`${h.url}/auth/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': from }, body: JSON.stringify({ message, signature }) })
  return { status: response.status, code: ((await response.json()) as { code?: string }).code }
}

t.test('a stranger\'s forged sign-ins from one client address do not lock another client\'s contract wallet out', async (t) => {
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = await deployOwnerWallet(h.network, await fundedAccount(h.devnet, h.network, 0n), owner.address)
  for (let round = 0; round < 3; round++) {
    // The stranger: more forged sign-ins than the share holds, at once, each naming a fresh address.
    const forged = await Promise.all(Array.from({ length: SHARE + 2 }, () => signIn(privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()), '203.0.113.66')))
    t.ok(forged.some((reply) => reply.code === 'chain_reads_exhausted'), `round ${round}: the stranger emptied the share (${forged.map((r) => r.code).join(', ')})`)
    const honest = await signIn(wallet, owner, '198.51.100.7')
    t.equal(honest.status, 201, `round ${round}: the contract wallet of another client signs in (got ${honest.status} ${honest.code ?? ''})`)
  }
})
