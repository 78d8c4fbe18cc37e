// outsider12: llms.txt told a lender that a failed job's leased offer is "closing" and "the lease stays payable until its
// deadline; a payment in time funds the offer". On chain a lease on the failed job itself is not payable: failJob makes
// the job not open, and paySupplier reverts JobNotOpen from its block on (README, "Offers withdrawn under a lease are
// closing", says so; only a payment mined before the failJob funds the offer). A lender agent that paid the lease event
// its stream brought before the failure, as llms.txt said it could, lost the gas of a reverted transaction. Here the
// lease's served paySupplier reverts after the failure, and llms.txt says so. Fails on 04104a7 (the llms.txt sentence).
import t from 'tap'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc } from '../fixtures/service.ts'
import { actionFor } from './fixtures/api.ts'

const h = await startHarness({ config: { leaseTtlSeconds: 120 } })
t.teardown(() => h.stop())

t.test('a lease on a job its client failed cannot be paid, and llms.txt says so', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_outsider12_closing'
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(5)))
  const offerId = decision.body.offer.offerId as string
  t.equal((await borrowerClient.post('/credit/match', { offerId })).body.lease?.lender, lender.account.address)
  const action = await actionFor(lender, offerId)
  t.equal((await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'cancelled' })).status, 200)
  t.equal((await borrowerClient.get(`/credit/offers/${offerId}`)).body.state, 'closing', 'the leased offer is closing')
  const actions = (await lender.client.get(`/lenders/${lender.account.address}/actions`)).body as { kind: string }[]
  t.notOk(actions.some((a) => a.kind === 'pay_supplier'), 'the lender is no longer asked to pay it')
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction']).then(() => 'mined', (error: Error) => error.message)
  t.match(paid, /JobNotOpen|revert/, 'the contract refuses the payment before the deadline')

  const llms = await (await fetch(`${h.url}/llms.txt`)).text()
  t.notMatch(llms, /"closing" \(not rematched\): the\s+lease stays payable until its deadline/, 'llms.txt no longer says the lease stays payable')
  t.match(llms, /one on the failed job does not \(paySupplier reverts\s+JobNotOpen/, 'llms.txt says a lease on the failed job is not payable')
})

t.test('llms.txt says what the .../*-transactions routes answer: an object whose transactions are to be sent in order', async (t) => {
  // An agent reading llms.txt alone iterated the answer as the list of transactions (it is an object around it).
  const reply = await fetch(`${h.url}/credit/jobs/job_outsider12_shape/funding-transactions?network=${h.network.slug}&asset=USDC&receivableAtomic=5000000&agent=0x90F79bf6EB2c4f870365E785982E1f101E93b906&client=0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65`)
  const body = (await reply.json()) as Record<string, unknown>
  t.same(Object.keys(body).sort(), ['amountAtomic', 'asset', 'key', 'network', 'transactions'])
  t.equal((body['transactions'] as unknown[]).length, 2, 'approve, then fundJob')
  const llms = await (await fetch(`${h.url}/llms.txt`)).text()
  t.match(llms, /GET \.\.\.\/\*-transactions routes answer \{"network","asset","key","amountAtomic","transactions":\[approve, the call\]\}/)
})

t.test('llms.txt says which bytes noteHash hashes, so that whoever holds the note can show it matches', async (t) => {
  const llms = await (await fetch(`${h.url}/llms.txt`)).text()
  t.match(llms, /the keccak256 of its UTF-8 bytes, noteHash: with viem, keccak256 over stringToBytes\(note\)/)
})
