// A borrower (and its lender) is told when its supplier's payment was held: the token refused the supplier at
// paySupplier (USDC's blacklist, which the devnet's TestStablecoin has), so the contract took the principal from the
// lender's session wallet and holds it for the supplier (PaymentHeld, claimHeld once the token accepts it). Before, the
// advance's view and its stream event were those of any advance: the borrower could not tell its supplier had not been
// paid. Now the advance says supplierPaymentHeld: true, from the PaymentHeld of its own paySupplier transaction, whether
// the lender's report or the chain follower opened it; an advance whose supplier was paid says nothing of it.
import t from 'tap'
import type { Address } from 'viem'
import { ChainAgent } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { EventStream } from '../../src/client/stream.ts'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, setBlacklisted, until, type Json } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('an advance whose supplier the token refused says its payment is held, on its view and its stream event', async (t) => {
  const supplier = h.devnet.accounts.supplier.address as Address
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_supplier_payment_held'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const streamed = new Map<string, Json>()
  const stream = new EventStream({ baseUrl: h.url, token: () => new CreditClient(h.url).signIn(borrower) })
  t.teardown(() => stream.close())
  stream.on((message) => {
    if (message.type === 'event' && message.kind === 'advance') streamed.set(message.advance.advanceId, message.advance as Json)
  })
  await stream.ready()
  /** A matched offer of `amount` the lender pays; reported or left to the chain follower. Answers the advance's id. */
  const paidAdvance = async (amount: bigint, report: boolean): Promise<string> => {
    const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, amount, usdc(1)))
    t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body.reasons))
    const offerId = decision.body.offer.offerId as string
    t.equal((await borrowerClient.post('/credit/match', { offerId })).body.lease?.lender, lender.account.address)
    const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned((await actionFor(lender, offerId))['transaction'])
    if (report) {
      const reported = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
      t.equal(reported.status, 200, 'the payment is an advance')
      return reported.body.advanceId as string
    }
    let advanceId: string | undefined
    await until(async () => (advanceId = (await borrowerClient.get(`/credit/offers/${offerId}`)).body.advanceId ?? undefined) !== undefined, 20_000, 'the follower to open the advance')
    return advanceId as string
  }

  await setBlacklisted(h, supplier, true)
  const reportedHeld = await paidAdvance(usdc(10), true)
  const followedHeld = await paidAdvance(usdc(11), false)
  await setBlacklisted(h, supplier, false)
  const paid = await paidAdvance(usdc(12), true)

  for (const [advanceId, how] of [[reportedHeld, 'reported'], [followedHeld, 'followed']] as const) {
    const view = (await borrowerClient.get(`/credit/advances/${advanceId}`)).body
    t.equal(view.supplierPaymentHeld, true, `the borrower's view of the ${how} advance says its supplier's payment is held`)
    t.equal(view.state, 'active', 'owed as any advance')
    t.equal((await lender.client.get(`/credit/advances/${advanceId}`)).body.supplierPaymentHeld, true, "and so does the lender's")
  }
  t.notOk('supplierPaymentHeld' in (await borrowerClient.get(`/credit/advances/${paid}`)).body, 'a supplier paid: nothing held said')
  await until(() => [reportedHeld, followedHeld, paid].every((id) => streamed.has(id)), 10_000, 'the stream to show the three advances')
  t.equal(streamed.get(reportedHeld)?.supplierPaymentHeld, true, 'the stream event of the reported advance says it')
  t.equal(streamed.get(followedHeld)?.supplierPaymentHeld, true, 'the stream event of the followed advance says it')
  t.notOk('supplierPaymentHeld' in (streamed.get(paid) ?? {}), 'the paid one does not')
  // Kept in the advance's record: a restart shows the same (the store's snapshot, then the engine restored from it).
  stream.close()
  await h.restart()
  const restarted = await signedIn(h.url, borrower)
  for (const advanceId of [reportedHeld, followedHeld]) {
    t.equal((await restarted.get(`/credit/advances/${advanceId}`)).body.supplierPaymentHeld, true, 'kept across a restart')
  }
  t.notOk('supplierPaymentHeld' in (await restarted.get(`/credit/advances/${paid}`)).body, 'and the paid one still says nothing')
  // The claim it points to: what the contract holds for the supplier, listed with its claimHeld.
  const held = (await restarted.get(`/credit/held-payments/${supplier}`)).body
  t.match(JSON.stringify(held), usdc(21).toString(), 'the held payments list the two principals')
})
