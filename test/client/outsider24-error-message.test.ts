// outsider24: an agent on the SDK that sent a request the schema refuses printed the CreditApiError it got: "POST
// /lenders/register: 400 validation_failed The request does not match the documented schema.", with nothing naming
// the field; the problem's `errors` said which (/body/acceptedRiskBands/0 must be one of "A", "B", "C") but only
// error.problem.errors held them. Now the message names them too. Fails on 022db7b (the message).
import t from 'tap'
import { AgentCredit, CreditApiError } from '../../src/client/index.ts'
import { fundedAccount, startHarness, USDC } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())

t.test('a validation failure\'s message names the fields the problem lists', async (t) => {
  const agent = new AgentCredit({ baseUrl: h.url, account: await fundedAccount(h.devnet, h.network, 0n) })
  const error = await agent.registerLender({ availableLiquidityAtomic: '1000000', asset: USDC, networks: [h.network.slug], minFeeBps: 250, maxDurationSeconds: 86_400, acceptedRiskBands: ['a' as 'A'] }).then(() => undefined, (e: unknown) => e)
  t.ok(error instanceof CreditApiError)
  t.equal((error as CreditApiError).code, 'validation_failed')
  t.match((error as CreditApiError).message, '/body/acceptedRiskBands/0 must be one of "A", "B", "C"')
  // A problem without errors keeps its message as it was.
  const other = await agent.offer('off_404').then(() => undefined, (e: unknown) => e)
  t.equal((other as CreditApiError).message, 'GET /credit/offers/off_404: 404 offer_not_found no offer off_404')
})
