// An outsider's probe (outsider16): a lender pays the supplier close to its lease's deadline, then the chain jumps past
// every deadline and TTL at once, so that more leases fall due than one command times out (`timeOutsPerCommandMax`,
// 8): the chain follower's batch ends only some, the rest are left to the ticker (off here) or to the borrower's
// request at `liveOffersPerBorrowerMax`, which ends its own. The paid lease is never one of them: its payment is
// applied from the chain (the lender never reports it), the advance recorded for the lender and owed to it; every other
// lease ends once (its lender's reserved liquidity back, each counted expired once), and the ledger equals the chain.
// It fails if the follower's bounded batch (or the request) timed out the paid lease before its SupplierPaid was
// applied (the paid lease has the first deadline: the batch's first time-out, were the payment applied after them):
// the offer would end `stale`, the lender's payment would be on chain with no advance recorded for it; and if
// the request at the bound did not end its own leases past their deadline (it would be refused, live_offers_limit).
// The chain's clock is the test's: no block is mined but the payment's and the jump's (the devnet's block a second
// would let the follower end the rest before the request, and pass the deadline before the payment on a slow machine).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, readyLender, signedIn, startHarness, usdc, waitForChainTime, type Harness } from '../fixtures/service.ts'
import { actionFor, backingSourceBody, expectReconciled, until, type Json } from './fixtures/api.ts'

const BOUND = 12
/** The engine's timeOutsPerCommandMax (its default): what one follower batch times out at the most. */
const TIME_OUTS_PER_COMMAND = 8
const now = Date.now()
let h: Harness
t.before(async () => {
  h = await startHarness({ clock: () => now, config: { offerTtlSeconds: 120, leaseTtlSeconds: 60, engine: { liveOffersPerBorrowerMax: BOUND } } })
})
t.teardown(async () => {
  await h.stop()
})
t.test('a lease paid just before its deadline is funded when the leases beside it are timed out at the bound', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  const source = await client.post('/credit/backing-sources', await backingSourceBody(h, account.address, { sourceId: 'o16-deadline', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 }))
  t.equal(source.status, 201)
  const ask = () => client.post('/credit/request', creditRequest(h, account.address, 'o16-deadline', usdc(5), usdc(1)))
  const offers: string[] = []
  for (let i = 0; i < BOUND; i++) {
    const reply = await ask()
    t.equal(reply.body.decision, 'approved')
    offers.push(reply.body.offer.offerId as string)
    const match = await client.post('/credit/match', { offerId: reply.body.offer.offerId })
    t.equal(match.body.lease?.lender, lender.account.address)
  }
  t.equal((await ask()).status, 409, 'at the bound')
  const paidOffer = offers[0]!
  const action = await actionFor(lender, paidOffer)
  const deadline = BigInt(action['authorization'].deadline)
  const lastDeadline = BigInt((await actionFor(lender, offers[BOUND - 1]!))['authorization'].deadline)
  // From here on only the test mines blocks. Last in this file: the devnet keeps this mode.
  const anvil = createTestClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl), mode: 'anvil' })
  await anvil.setIntervalMining({ interval: 0 })
  await anvil.setAutomine(false)
  // Close to its deadline (60 s): paid in a block 5 s before it, never reported; the next block, mined with it in one
  // call (so that the follower reads both in one batch, but for a head read between the two), is past every deadline
  // and TTL at once (each offer's TTL is at most 60 s after its lease's deadline).
  const paying = new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  await until(async () => Number(((await anvil.request({ method: 'txpool_status' } as never)) as { pending: string }).pending) === 1, 10_000, 'the payment in the pool')
  await anvil.setNextBlockTimestamp({ timestamp: deadline - 5n })
  await anvil.mine({ blocks: 2, interval: Number(lastDeadline - deadline) + 71 })
  const chainReader = new ChainAgent(h.network, lender.session).publicClient
  const paid = await chainReader.getTransactionReceipt({ hash: await paying })
  t.equal(paid.status, 'success', 'the payment was mined')
  t.equal((await chainReader.getBlock({ blockNumber: paid.blockNumber })).timestamp, deadline - 5n, 'in a block 5 s before the deadline')
  t.equal((await chainReader.getBlock({ blockNumber: paid.blockNumber + 1n })).timestamp, lastDeadline + 66n, 'the next one past every deadline and TTL')
  await waitForChainTime(h, Number(lastDeadline + 66n) * 1000)
  const reader = new CreditClient(h.url)
  const states = async () => Promise.all(offers.map(async (id) => (await reader.get(`/credit/offers/${id}`)).body.state as string))
  // The follower's batch that observed that time applied the payment, then timed out 8 leases (with their offers);
  // the rest wait for the ticker (off), and no later block comes. The borrower refills its live offers up to the bound,
  // then asks once more: that request at the bound ends its leases past their deadline whose offers are past their TTL.
  const leftLeased = (await states()).filter((s) => s === 'leased').length
  t.equal(leftLeased, BOUND - 1 - TIME_OUTS_PER_COMMAND, `the follower's bounded batch left leases past their deadline: ${(await states()).join(',')}`)
  for (let i = 0; i < BOUND - leftLeased; i++) t.equal((await ask()).body.decision, 'approved', 'a fresh offer below the bound')
  t.equal((await states()).filter((s) => s === 'leased').length, leftLeased, 'still leased before the request at the bound: only it can end them')
  const reply = await ask()
  t.equal(reply.body.decision, 'approved', `the request at the bound is approved: ${JSON.stringify(reply.body)}`)
  const offer = async (id: string): Promise<Json> => (await reader.get(`/credit/offers/${id}`)).body
  await until(async () => (await offer(paidOffer)).state === 'funded', 10_000, 'the paid offer funded from the chain')
  const advance = (await reader.get(`/credit/advances/${(await offer(paidOffer)).advanceId}`)).body
  t.equal(advance.lender, lender.account.address, 'the advance is the lender\'s')
  t.equal(advance.principalAtomic, usdc(5).toString())
  t.equal(advance.lenderOwedAtomic, (BigInt(advance.principalAtomic) + BigInt(advance.feeAtomic) - BigInt(advance.insuranceAtomic)).toString(), 'owed to it: principal and its fee less the insurance')
  // Every other lease ended, once each, without a dispatch.
  for (const id of offers.slice(1)) t.equal((await offer(id)).state, 'expired', `${id} expired`)
  // The lender, inactive after eleven unpaid leases, is no longer listed in /lenders: the service's totals (it is the
  // only lender here) and the counts say the rest.
  const state = (await reader.get('/credit/state')).body
  t.equal(state.counts.liveLeases, 0, 'no lease left live')
  t.equal(state.counts.liveOffers, BOUND - leftLeased + 1, 'the fresh offers live')
  t.equal(state.totals.reservedAtomic, '0', 'no liquidity left held')
  t.equal(state.totals.deployedAtomic, usdc(5).toString(), 'the paid advance deployed')
  t.equal(state.totals.availableAtomic, usdc(95).toString(), 'the rest available')
  t.equal(state.counts.liveAdvances, 1)
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
})
