// outsider21: one stranger's request larger than the cheapest lender's session wallet parks that lender out of its
// book for every later request, small ones included, until its wallet changes. The lender's wallet covers 900 of its
// policy's 1,000 after one honest cycle (100 lent and repaid: paySupplier spent that much of the setup approve, and the
// repayment restores the balance, not the allowance; a wallet funded short of the policy does the same). The stranger funds a
// job (2,000, reclaimable, or back at once by failing it) and asks 950 with a maximum fee that only this lender's ask
// meets: nobody is leased, the lender gets an insufficient_balance refusal (no cost to it) and is parked. An honest
// borrower's request of 10 then goes to a lender asking 4 times as much. Prints both matches and exits 1 if the
// cheapest lender was passed over. Between the two, the lender's wallet changes (1 unit in: it is back in its book) and
// the stranger's offer, still waiting, is dispatched again (POST /credit/dispatch, any session): it is parked again.
// node --import tsx test/api/outsider21-scripts/park-partial-wallet.ts
import { ChainAgent } from '../../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, startHarness, USDC, usdc } from '../../fixtures/service.ts'
import { fundAdvance, until } from '../fixtures/api.ts'

const h = await startHarness({ config: { leaseTtlSeconds: 120 } })
let passedOver = false
try {
  const cheap = await readyLender(h, { minFeeBps: 50, liquidityAtomic: usdc(1000) })
  await readyLender(h, { minFeeBps: 200, liquidityAtomic: usdc(1000) })
  // One honest cycle: 100 lent and repaid in full. The balance is back (and the fee), the allowance is 900.
  const first = await fundedJob(h, { jobId: 'job_o21_cycle', receivableAtomic: usdc(1000) })
  const { advance } = await fundAdvance(h, { borrower: first.borrower.address, borrowerClient: first.borrowerClient, lender: cheap, source: 'job_o21_cycle', amountAtomic: usdc(100), maximumFeeAtomic: usdc(1) })
  const repay = await first.borrowerClient.get(`/credit/advances/${advance.advanceId}/repay-transactions`)
  await fund(h.devnet, h.network, first.borrower.address, BigInt(repay.body.amountAtomic))
  await new ChainAgent(h.network, first.borrower).sendAll(repay.body.transactions)
  await until(async () => (await first.borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state === 'repaid', 20_000, 'the repayment')
  await h.app.service.watcher.waitFor(() => h.app.service.watcher.spendableAtomic(h.network.slug, USDC, cheap.session.address) === usdc(900), 10_000)
  console.log('after the cycle: the wallet pays 900, the policy has 1,000 not lent')
  const stranger = await fundedJob(h, { jobId: 'job_o21_stranger', receivableAtomic: usdc(2000) })
  // 950 at 50 bps: a fee of 4.75, the maximum; the 200 bps lender's 19 is over it, so the walk stops after the cheap one.
  const big = await stranger.borrowerClient.post('/credit/request', creditRequest(h, stranger.borrower.address, 'job_o21_stranger', usdc(950), 4_750_000n))
  const strangerMatch = await stranger.borrowerClient.post('/credit/match', { offerId: big.body.offer.offerId })
  console.log('stranger\'s match:', { lease: strangerMatch.body.lease, refused: strangerMatch.body.refusedLeases.map((l: { lender: string; endReason: string }) => [l.lender, l.endReason]) })
  // Any change of its wallet brings it back; the stranger's offer still waits, and a dispatch (any session) parks it again.
  const read = new Promise<void>((resolve) => {
    h.app.service.watcher.on('update', ({ holder }: { holder: string }) => holder === cheap.session.address && resolve())
  })
  await fund(h.devnet, h.network, cheap.session.address, 1n, 0n)
  await read
  const dispatched = await stranger.borrowerClient.post('/credit/dispatch', {})
  console.log('stranger\'s dispatch after the lender\'s wallet changed:', JSON.stringify(dispatched.body).slice(0, 400))
  const honest = await fundedJob(h, { jobId: 'job_o21_honest', receivableAtomic: usdc(1000) })
  const small = await honest.borrowerClient.post('/credit/request', creditRequest(h, honest.borrower.address, 'job_o21_honest', usdc(10), usdc(1)))
  const second = await honest.borrowerClient.post('/credit/match', { offerId: small.body.offer.offerId })
  console.log('honest match of 10:', { lender: second.body.lease?.lender, feeAtomic: second.body.lease?.feeAtomic, cheapest: cheap.account.address })
  passedOver = second.body.lease?.lender !== cheap.account.address
} finally {
  await h.stop()
}
console.log(passedOver ? 'the cheapest lender, whose wallet covers 10, was passed over' : 'the cheapest lender was leased')
process.exit(passedOver ? 1 : 0)
