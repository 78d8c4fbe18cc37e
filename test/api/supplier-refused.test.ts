// A supplier the token refuses (USDC's blacklist, which the devnet's TestStablecoin has as FiatToken does). An
// outsider's finding (outsider14): paySupplier reverted, so every lender leased an offer naming such a supplier paid the
// reverted transaction's gas and lost reliability and reputation for a lease it could not pay, and a new lender fell
// below the matching minimum after one: any borrower with one job could push the cheapest lenders out of matching, one
// after another, at no cost. Now the contract holds the principal for the supplier (PaymentHeld; claimHeld once the
// token takes it): the lender's payment goes through, the advance is born and owed as any other, the lender is credited
// for a paid lease, and the service's views and reconciliation agree with the contract's heldFor.
import t from 'tap'
import type { Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, expectReconciled, setBlacklisted, until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('a lease naming a supplier the token refuses is paid: the principal is held for the supplier, the lender is not penalised', async (t) => {
  const chain = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))
  const supplier = h.devnet.accounts.supplier.address as Address
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_supplier_refused'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  await setBlacklisted(h, supplier, true)
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(10), usdc(1)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body.reasons))
  const offerId = decision.body.offer.offerId as string
  const match = await borrowerClient.post('/credit/match', { offerId })
  t.equal(match.body.lease?.lender, lender.account.address)
  const before = structuredClone(h.app.service.engine.getLender(lender.account.address)!)
  const supplierBefore = await chain.balanceOf(USDC, supplier)

  const action = await actionFor(lender, offerId)
  const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const reported = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paymentTx })
  t.equal(reported.status, 200, 'the payment is an advance')
  t.equal(await chain.balanceOf(USDC, supplier), supplierBefore, 'nothing reached the refused supplier')
  const heldFor = await chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [chain.token(USDC), supplier] })
  t.equal(heldFor, usdc(10), 'the principal is held for it')

  const after = h.app.service.engine.getLender(lender.account.address)!
  t.ok(after.reliabilityBps >= before.reliabilityBps, `no reliability lost (${before.reliabilityBps} -> ${after.reliabilityBps})`)
  t.ok(after.reputationBps >= before.reputationBps, `no reputation lost (${before.reputationBps} -> ${after.reputationBps})`)
  t.equal(after.leasesExpired, before.leasesExpired, 'no lease expired')
  t.equal((await borrowerClient.get(`/credit/advances/${reported.body.advanceId}`)).body.state, 'active', 'the borrower owes it as any advance')

  // The service followed the PaymentHeld: its views and the contract agree.
  await until(() => h.app.service.engine.heldPayments([supplier]).some((r) => r.amountAtomic === usdc(10)), 20_000, 'the follower to apply the PaymentHeld')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
  await setBlacklisted(h, supplier, false)
})
