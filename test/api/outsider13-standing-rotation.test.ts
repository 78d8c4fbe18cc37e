// outsider13: standing bought with one coin passed from wallet to wallet. When strangers empty all clients' sign-in
// bucket (503 sign_ins_exhausted), a sign-in is admitted when its wallet has standing, and one kind of standing is "a
// registered lender whose session wallet the watcher sees able to lend" (README, Authorization and keyed requests:
// "each costs real tokens, which free wallets do not"). The watcher reads the balance now, not what the wallet ever
// held: one least advance (1 USDC on the devnet) handed from session wallet to session wallet gives every owner
// standing in turn, each at the cost of gas (a registration, the setup approve, one transfer). Each admitted sign-in
// stores a session for 24 h (and, refreshed, a week), so the backstop's bound ("a fresh wallet stays refused, so the
// bound on what strangers make the store keep holds") is what one coin and gas buy: here 4 wallets, in production
// as many as the stranger pays gas for, each up to sessionsPerWalletMax sessions, within its client's bucket only.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { fund, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import type { WireTransaction } from '../../src/client/chain.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

async function trySignIn(account: PrivateKeyAccount): Promise<number> {
  const client = new CreditClient(h.url)
  try {
    await client.signIn(account)
    return 201
  } catch (error) {
    return Number(/sign-in: (\d+)/.exec(String(error))?.[1] ?? 0)
  }
}

t.test('one least advance rotated through session wallets gives each owner standing while sign-ins are exhausted', async (t) => {
  const n = 4
  const owners: PrivateKeyAccount[] = []
  const sessions: PrivateKeyAccount[] = []
  // Free wallets register as lenders (the sign-in buckets are lifted for the set-up, as a stranger does before a flood),
  // their session wallets get gas and send their setup transactions; no tokens yet. Then they end their sessions.
  for (let i = 0; i < n; i++) {
    const owner = privateKeyToAccount(generatePrivateKey())
    const client = await signedIn(h.url, owner)
    const reg = await client.post('/lenders/register', { availableLiquidityAtomic: usdc(1).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 86400, acceptedRiskBands: ['A', 'B', 'C'] })
    t.equal(reg.status, 201)
    const session = privateKeyToAccount(reg.body.sessionKey.privateKey)
    await fund(h.devnet, h.network, session.address, 0n, 10n ** 17n)
    const agent = new ChainAgent(h.network, session)
    for (const tx of reg.body.setupTransactions as (WireTransaction & { network: string })[]) if (tx.network === h.network.slug) await agent.sendUnsigned(tx)
    t.equal((await client.call('DELETE', '/auth/sessions')).status, 200)
    owners.push(owner)
    sessions.push(session)
  }
  // One coin: the least advance, 1 USDC, in the first session wallet.
  await fund(h.devnet, h.network, sessions[0]!.address, usdc(1), 10n ** 17n)

  await h.restart({ signInsPerHour: 60 }) // all clients' bucket: one sign-in a minute, a bucket of one
  t.equal(await trySignIn(privateKeyToAccount(generatePrivateKey())), 201, 'a stranger takes the bucket')
  t.equal(await trySignIn(privateKeyToAccount(generatePrivateKey())), 503, 'the next fresh wallet is refused 503 sign_ins_exhausted')
  const watcher = h.app.service.watcher
  const admitted: number[] = []
  for (let i = 0; i < n; i++) {
    const session = sessions[i]!
    await watcher.waitFor(() => watcher.spendableAtomic(h.network.slug, USDC, session.address) >= usdc(1), 10_000)
    admitted.push(await trySignIn(owners[i]!))
    // The coin moves on: this owner keeps its session (24 h), and its wallet is no longer able to lend.
    if (i + 1 < n) {
      await new ChainAgent(h.network, session).transferToken(USDC, sessions[i + 1]!.address, usdc(1))
      await watcher.waitFor(() => watcher.spendableAtomic(h.network.slug, USDC, session.address) === 0n, 10_000)
    }
  }
  t.equal(await trySignIn(privateKeyToAccount(generatePrivateKey())), 503, 'a fresh wallet is still refused')
  const holders = admitted.filter((status) => status === 201).length
  t.comment(`owners admitted in turn with one coin: ${JSON.stringify(admitted)}`)
  t.ok(holders <= 1, `one least advance gave standing to at most one wallet (got ${holders} of ${n} admitted past the exhausted bucket)`)
})
