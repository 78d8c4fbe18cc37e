// The adversary's watched-wallet slots, rebuilt against the real service and anvil with the cap set to 3. Strangers
// registered free lenders and sent a 0-value token transfer to each session wallet (the same Transfer log as a real
// funding): each took one of `walletsWatchedPerNetworkMax` slots for good, and every later lender's funded wallet was
// never watched, read as empty and was never leased. Now a 0-value transfer funds nothing, and when the slots are full
// a wallet that can lend takes the slot of the watched wallet worth the least, never of one with a live lease.
import t from 'tap'
import type { Address, Hash } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type ReadyLender } from '../fixtures/service.ts'

const h = await startHarness({ config: { walletsWatchedPerNetworkMax: 3 } })
t.teardown(() => h.stop())

const watcher = () => h.app.service.watcher
const watched = () => watcher().status()[0]!.holders

/** Waits until the watcher has read past the block that mined `hash`. */
async function seen(agent: ChainAgent, hash: Hash): Promise<void> {
  const { blockNumber } = await agent.publicClient.getTransactionReceipt({ hash })
  await watcher().waitFor(() => (watcher().status()[0]!.lastBlock ?? -1n) >= blockNumber, 10_000)
}

/** A stranger's free lender: a fresh wallet signs in, registers, and sends `amountAtomic` to its session wallet. */
async function strangerLender(amountAtomic: bigint): Promise<Address> {
  const account = await fundedAccount(h.devnet, h.network, amountAtomic)
  const client = await signedIn(h.url, account)
  const reply = await client.post('/lenders/register', {
    availableLiquidityAtomic: usdc(1000).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 1, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
  })
  if (reply.status !== 201) throw new Error(`register: ${reply.status} ${JSON.stringify(reply.body)}`)
  const session = privateKeyToAccount(reply.body.sessionKey.privateKey).address
  const agent = new ChainAgent(h.network, account)
  await seen(agent, await agent.transferToken(USDC, session, amountAtomic))
  return session
}

const spendable = (lender: ReadyLender) => watcher().spendableAtomic(h.network.slug, USDC, lender.session.address)

t.test('a 0-value transfer to a session wallet takes no watch slot', async (t) => {
  for (let i = 0; i < 3; i += 1) await strangerLender(0n)
  t.equal(watched(), 0, 'three strangers\' 0-value transfers: no wallet watched')
  t.ok(watcher().hasRoom(h.network.slug))
})

let first: ReadyLender
t.test('slots full of dust: a funded lender takes the slot of a wallet worth nothing, and is leased', async (t) => {
  const dust = [await strangerLender(1n), await strangerLender(1n), await strangerLender(1n)]
  t.equal(watched(), 3, 'three wallets holding 1 unit (no allowance) fill the cap')
  // readyLender waits until the watcher reads the lender's funded allowance: on the old code it never did.
  first = await readyLender(h, { minFeeBps: 1, liquidityAtomic: usdc(10) })
  t.equal(spendable(first), usdc(10), 'the funded lender\'s wallet is watched')
  t.equal(watched(), 3, 'within the cap')
  t.equal(dust.filter((holder) => watcher().holding(h.network.slug, USDC, holder) === undefined).length, 1, 'one dust wallet gave its slot')
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_watch_slots', receivableAtomic: usdc(100) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_watch_slots', usdc(5), usdc(1)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body))
  const match = await borrowerClient.post('/credit/match', { offerId: decision.body.offer.offerId })
  t.equal(match.body.lease?.lender, first.account.address, 'the funded lender is leased')
})

t.test('a wallet with a live lease keeps its slot; the next cheapest gives it', async (t) => {
  t.equal(h.app.service.engine.liveLeasesOf(first.account.address).length, 1, 'the first lender holds a live lease')
  const second = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(50) })
  const third = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(60) })
  t.equal(watched(), 3, 'the dust is gone: three lenders hold the slots')
  t.equal(spendable(second), usdc(50))
  // The first lender's wallet (10) is worth the least but holds a live lease: the second (50) gives its slot.
  const fourth = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(100) })
  t.equal(spendable(fourth), usdc(100), 'the richer wallet is watched')
  t.equal(spendable(first), usdc(10), 'the leased wallet kept its slot')
  t.equal(spendable(third), usdc(60))
  t.equal(watcher().holding(h.network.slug, USDC, second.session.address), undefined, 'the cheapest without a lease gave its slot')
  t.ok(watcher().isWaitingForFunds(h.network.slug, second.session.address), 'and waits in the unfunded set to come back')
})
