// Idempotency-Key over real HTTP: concurrent retries of one POST apply it once and all get the first answer, and a
// retry after a restart still gets it (the response is stored in the same commit as the change).
import t, { type Test } from 'tap'
import { privateKeyToAddress } from 'viem/accounts'
import { CreditClient, type Reply } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'

const RETRIES = 10

let h: Harness
t.before(async () => {
  h = await startHarness()
  await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
})
t.teardown(async () => {
  await h.stop()
})

const counts = () => h.app.service.engine.creditState().counts
const replayed = (reply: Reply) => reply.headers.get('idempotent-replayed') === 'true'

/** The same bearer token against the current (possibly restarted) service. */
function again(client: CreditClient): CreditClient {
  const next = new CreditClient(h.url)
  next.token = client.token
  next.address = client.address
  return next
}

/** RETRIES identical POSTs at once; checks they agree and that exactly one was applied (the others replayed). */
async function concurrently(t: Test, client: CreditClient, path: string, body: unknown, key: string, status: number) {
  const replies = await Promise.all(Array.from({ length: RETRIES }, () => client.post(path, body, { idempotencyKey: key })))
  t.same(replies.map((r) => r.status), Array(RETRIES).fill(status), `all ${RETRIES} answered ${status}`)
  const first = replies.filter((r) => !replayed(r))
  t.equal(first.length, 1, 'one request ran; the others are marked idempotent-replayed')
  return { replies, first: first[0] as Reply }
}

t.test('credit request, match and lender registration: concurrent retries apply once; a retry after a restart replays', async (t) => {
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_idem_1', receivableAtomic: usdc(1000) })
  const before = counts()

  const request = creditRequest(h, borrower.address, 'job_idem_1', usdc(50), usdc(5))
  const credit = await concurrently(t, borrowerClient, '/credit/request', request, 'credit-1', 200)
  t.equal(credit.first.body.decision, 'approved')
  for (const reply of credit.replies) t.same(reply.body, credit.first.body, 'every retry gets the first answer')
  t.equal(counts().liveOffers, before.liveOffers + 1, 'one offer created')
  const offerId = credit.first.body.offer.offerId as string

  const match = await concurrently(t, borrowerClient, '/credit/match', { offerId }, 'match-1', 200)
  t.ok(match.first.body.lease, 'the match leased the offer')
  for (const reply of match.replies) t.same(reply.body, match.first.body, 'every retry gets the first answer')
  t.equal(counts().liveLeases, before.liveLeases + 1, 'one lease created')

  const lenderAccount = await fundedAccount(h.devnet, h.network, 0n)
  const lenderClient = await signedIn(h.url, lenderAccount)
  const registration = {
    availableLiquidityAtomic: usdc(500).toString(),
    asset: USDC,
    networks: [h.network.slug],
    minFeeBps: 700,
    maxDurationSeconds: 3600,
    acceptedRiskBands: ['A', 'B'],
  }
  const register = await concurrently(t, lenderClient, '/lenders/register', registration, 'register-1', 201)
  const privateKey = register.first.body.sessionKey.privateKey as `0x${string}`
  t.match(privateKey, /^0x[0-9a-f]{64}$/, 'the first answer carries the session private key')
  t.equal(privateKeyToAddress(privateKey), register.first.body.sessionKey.address, 'and it is the key of the session address')
  const withoutKey = (body: any) => ({ ...body, sessionKey: { address: body.sessionKey.address } })
  for (const reply of register.replies.filter(replayed)) {
    t.equal(reply.body.sessionKey.privateKey, null, 'a replay never repeats the private key')
    t.notMatch(JSON.stringify(reply.body), privateKey.slice(2), 'not anywhere in the body')
    t.same(withoutKey(reply.body), withoutKey(register.first.body), 'otherwise the same answer')
  }
  t.equal(counts().lenders, before.lenders + 1, 'one lender registered')

  const other = await borrowerClient.post('/credit/request', { ...request, amountAtomic: usdc(60).toString() }, { idempotencyKey: 'credit-1' })
  t.equal(other.status, 422, 'the same key with another body is refused')
  t.equal(other.body.code, 'idempotency_key_reused')

  const applied = counts()
  await h.restart()
  t.same(counts(), applied, 'the restart restored the same live state')
  const afterCredit = await again(borrowerClient).post('/credit/request', request, { idempotencyKey: 'credit-1' })
  t.equal(afterCredit.status, 200)
  t.ok(replayed(afterCredit), 'replayed after the restart')
  t.same(afterCredit.body, credit.first.body, 'the credit decision of the first request')
  const afterMatch = await again(borrowerClient).post('/credit/match', { offerId }, { idempotencyKey: 'match-1' })
  t.equal(afterMatch.status, 200)
  t.ok(replayed(afterMatch))
  t.same(afterMatch.body, match.first.body, 'the match of the first request, not a conflict on the leased offer')
  const afterRegister = await again(lenderClient).post('/lenders/register', registration, { idempotencyKey: 'register-1' })
  t.equal(afterRegister.status, 201)
  t.ok(replayed(afterRegister))
  t.equal(afterRegister.body.sessionKey.privateKey, null, 'the private key is not repeated after a restart either')
  t.same(withoutKey(afterRegister.body), withoutKey(register.first.body))
  t.same(counts(), applied, 'nothing applied again')
  const unkeyed = await again(lenderClient).post('/lenders/register', registration)
  t.equal(unkeyed.status, 409, 'without the key the registration runs again and conflicts')
  t.equal(unkeyed.body.code, 'lender_exists')
  h.app.service.engine.checkInvariants()
})
