// outsider24: a lender that wanted to stop read the documents' bound on a withdrawal, "at most available + reserved +
// deployed + losses", and every lender view's availableAtomic: what its session wallet can pay now within the policy.
// The bound is the policy's (policyAvailableAtomic), and the two differ whenever the wallet cannot pay the whole policy
// (less in it than registered, or after a repayment, whose paySupplier spent allowance no repayment restores, until
// the approve of the actions list is sent): the lender withdrew availableAtomic + ..., 400 of 502.25 USDC in the
// outsider's flow, and the rest stayed lent. Here the wallet holds 300 of a 500 policy: the view says 300 and 500,
// the service takes a withdrawal of 500, and the OpenAPI document and llms.txt name policyAvailableAtomic as the bound.
// Fails on 022db7b (the documents said "available").
import t from 'tap'
import { CreditClient } from '../../src/client/client.ts'
import { readyLender, startHarness, usdc } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('a withdrawal is bounded by policyAvailableAtomic, not the wallet-bound availableAtomic, and the documents say so', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(500), walletAtomic: usdc(300) })
  const { activity } = (await anyone.get(`/lenders/${lender.account.address}/wallet`)).body
  t.equal(activity.availableAtomic, usdc(300).toString(), 'the view: what the wallet can pay')
  t.equal(activity.policyAvailableAtomic, usdc(500).toString(), 'the policy')
  const all = await lender.client.post(`/lenders/${lender.account.address}/withdraw`, { amountAtomic: usdc(500).toString() })
  t.equal(all.status, 200, 'the whole policy is withdrawn')
  t.equal(all.body.lender.availableAtomic, '0')

  const document = (await anyone.get('/openapi.json')).body
  const body = document.paths['/lenders/{address}/withdraw'].post.requestBody.content['application/json'].schema
  const schema = body.$ref ? document.components.schemas[body.$ref.split('/').pop()] : body
  t.match(schema.properties.amountAtomic.description, /at most policyAvailableAtomic \+ reserved \+ deployed \+ losses/)
  t.match(document.paths['/lenders/{address}/withdraw'].post.description, /up to policyAvailableAtomic \+ reserved/)
  const llms: string = (await anyone.get('/llms.txt')).body
  t.match(llms, /POST \/lenders\/<address>\/withdraw \{"amountAtomic":"\.\.\."\} \(the lender only; at most policyAvailableAtomic \+ reserved \+ deployed \+ losses/)
})
