// outsider24: a first agent registering its job sent the hash of the first of the two served transactions, the
// approve (422 proof_wrong_contract, "no event of the credit contract ... in 0x..."), and, another time, the fundJob's
// hash before it was mined (422 proof_not_found, "no receipt for 0x..."): neither detail said what to send instead.
// Now each says it. Fails on 022db7b (the details).
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { ChainAgent } from '../../src/client/chain.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('a job registered with the approve\'s hash, or an unknown hash, is told which hash to send', async (t) => {
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const client = await fundedAccount(h.devnet, h.network, usdc(100))
  const jobId = `job_${crypto.randomUUID()}`
  const steps = (await anyone.get(`/credit/jobs/${jobId}/funding-transactions?network=${h.network.slug}&asset=${USDC}&receivableAtomic=${usdc(100)}&agent=${borrower.address}&client=${client.address}`)).body
  const [approveHash] = await new ChainAgent(h.network, client).sendAll(steps.transactions)
  const api = await signedIn(h.url, borrower)
  const body = (fundingTxHash: string) => ({ jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(100).toString(), dueAt: new Date(Date.now() + 7 * 86_400_000).toISOString(), fundingTxHash })

  const approve = await api.post('/credit/jobs', body(approveHash!))
  t.equal(approve.status, 422)
  t.equal(approve.body.code, 'proof_wrong_contract')
  t.match(approve.body.detail, /the last of the served unsigned transactions: fundJob, postCollateral, repay or paySupplier\), not its approve/)

  const unknown = await api.post('/credit/jobs', body(`0x${'ab'.repeat(32)}`))
  t.equal(unknown.status, 422)
  t.equal(unknown.body.code, 'proof_not_found')
  t.match(unknown.body.detail, /not mined yet \(wait for its receipt, then send the same request: nothing was recorded\)/)
})
