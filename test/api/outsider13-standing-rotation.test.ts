// outsider13: standing bought with one coin passed from wallet to wallet. When strangers empty all clients' sign-in
// bucket (503 sign_ins_exhausted), a sign-in is admitted when its wallet has standing, and one kind of standing is "a
// registered lender whose session wallet the watcher sees able to lend" (README, Authorization and keyed requests:
// "each costs real tokens, which free wallets do not"). The watcher reads the balance now, not what the wallet ever
// held: one least advance (1 USDC on the devnet) handed from session wallet to session wallet gives every owner
// standing in turn, each at the cost of gas (a registration, the setup approve, one transfer). Each admitted sign-in
// stores a session for 24 h (and, refreshed, a week), so the backstop's bound ("a fresh wallet stays refused, so the
// bound on what strangers make the store keep holds") is what one coin and gas buy: here 4 wallets, in production
// as many as the stranger pays gas for, each up to sessionsPerWalletMax sessions, within its client's bucket only.
// The second test makes it permanent: "a registered lender that has ... leased" has standing, and a lease needs only a
// wallet able to lend at the match. The party's lender, holding the coin, is leased an offer of the party's own
// borrower (a job of 2 USDC its own client funds), never pays it; the coin moves on, the client fails the job and has
// its escrow back, the lease runs out. With an empty wallet and nothing lent, the lender is still admitted when all
// clients' sign-in bucket and all callers' keyed bucket are empty (sign-in 201, keyed withdraw 200). Cost: gas (the
// approve, two transfers, the job's funding); the coin and the escrow come back. Both fail on 04104a7.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { advanceChainTime, creditRequest, fund, fundedJob, readyLender, signedIn, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
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

t.test('a lease of its own, left unpaid, gives a lender standing for good once the coin has moved on', async (t) => {
  await h.restart({ signInsPerHour: 0, keyedRequestsPerHour: 0 })
  // The party: a lender whose session wallet holds the one coin, a borrower and a job client (another wallet of the
  // party, funding a job of 2 USDC that it takes back by failing it).
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1), riskBands: ['A', 'B', 'C'] })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_o13_standing', receivableAtomic: usdc(2) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_o13_standing', usdc(1), usdc(1) / 10n))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body).slice(0, 300))
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  t.equal(match.body.lease?.lender, lender.account.address, 'the party\'s own lender is leased')
  // The coin moves on (the lease is never paid) and the job's client takes its escrow back.
  await new ChainAgent(h.network, lender.session).transferToken(USDC, lender.account.address, usdc(1))
  const watcher = h.app.service.watcher
  await watcher.waitFor(() => watcher.spendableAtomic(h.network.slug, USDC, lender.session.address) === 0n, 10_000)
  t.equal((await jobClientApi.post('/credit/jobs/job_o13_standing/fail', { reason: 'cancelled' })).status, 200, 'the escrow goes back')
  // The lease runs out unpaid (chain time past its expiry, then a dispatch).
  await advanceChainTime(h, 600)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await operator.post('/credit/dispatch')
  const offer = await borrowerClient.get(`/credit/offers/${decision.body.offer.offerId}`)
  t.comment(`the offer after the lease's expiry: ${offer.body.state}; the lease: ${JSON.stringify(offer.body.lease ?? offer.body.leases ?? null).slice(0, 200)}`)
  t.not(offer.body.state, 'leased', 'no live lease')
  t.equal((await lender.client.call('DELETE', '/auth/sessions')).status, 200)

  // Strangers empty all clients' sign-in bucket and all callers' keyed bucket (one each: a minute's worth of 60 an hour).
  await h.restart({ signInsPerHour: 60, keyedRequestsPerHour: 60 })
  const stranger = new CreditClient(h.url)
  await stranger.signIn(privateKeyToAccount(generatePrivateKey()))
  const register = (client: CreditClient, key: string) => client.call('POST', '/lenders/register', { availableLiquidityAtomic: usdc(1).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 86400, acceptedRiskBands: ['C'] }, { idempotencyKey: key })
  t.equal((await register(stranger, 'k1')).status, 201, 'a stranger\'s keyed request takes all callers\' bucket')
  t.equal((await stranger.call('POST', `/lenders/${stranger.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: 'k2' })).body.code, 'idempotency_keys_exhausted')
  t.equal(await trySignIn(privateKeyToAccount(generatePrivateKey())), 503, 'a fresh wallet is refused 503 sign_ins_exhausted')
  const admitted = await trySignIn(lender.account)
  const client = new CreditClient(h.url)
  let keyed = 'not signed in'
  if (admitted === 201) {
    await client.signIn(lender.account).catch(() => undefined)
    const reply = await client.call('POST', `/lenders/${lender.account.address}/withdraw`, { amountAtomic: '1' }, { idempotencyKey: 'k3' })
    keyed = `${reply.status} ${reply.body.code ?? ''}`
  }
  t.comment(`the lender with an unpaid lease of its own and an empty wallet: sign-in ${admitted}, keyed withdraw ${keyed}`)
  t.not(admitted, 201, 'a lender whose only lending was an unpaid lease of its own party, its wallet empty, is a stranger')
})
