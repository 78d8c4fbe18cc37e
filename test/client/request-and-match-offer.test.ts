// requestAndMatch whose match fails names the approved offer (outsider20's finding: the error did not carry it, so the
// offer counted against the borrower's live offers until it expired, and a retry made a second one). The borrower
// reaches the real service through a connection-level fault: a relay that passes every request on and drops the
// connection of each POST /credit/match unanswered (a lost network, the SDK's retries included). The error names the
// offer, still offered, and matching that id later, on a good connection, leases it.
import t from 'tap'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { AgentCredit, CreditApiError, OfferNotMatchedError } from '../../src/client/index.ts'
import { creditRequest, fundedJob, readyLender, startHarness, usdc, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

t.test('a failed match leaves the error with the approved offer, and matching it later works', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(2000) })
  const { borrower } = await fundedJob(h, { jobId: 'job_unmatched_1', receivableAtomic: usdc(1000) })

  const target = new URL(h.url)
  let matchesDropped = 0
  const relay = createServer((incoming, outgoing) => {
    if (incoming.method === 'POST' && incoming.url === '/credit/match') {
      matchesDropped++
      incoming.socket.destroy()
      return
    }
    const upstream = request({ host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(outgoing)
    })
    upstream.on('error', () => outgoing.destroy())
    incoming.pipe(upstream)
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => relay.close(() => resolve())))
  const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`

  const unlucky = new AgentCredit({ baseUrl: relayUrl, account: borrower })
  const body = creditRequest(h, borrower.address, 'job_unmatched_1', usdc(300), usdc(30)) as Parameters<AgentCredit['requestAndMatch']>[0]
  const error = await unlucky.requestAndMatch(body).then(() => undefined, (caught: unknown) => caught)
  t.ok(matchesDropped >= 1, 'the match never got an answer')
  t.ok(error instanceof OfferNotMatchedError, 'the error is the SDK\'s unmatched offer')
  t.ok(error instanceof CreditApiError, 'still a CreditApiError, for code that branches on one')
  const unmatched = error as OfferNotMatchedError
  t.equal(unmatched.decision.decision, 'approved')
  t.equal(unmatched.offerId, unmatched.decision.offer?.offerId, 'it names the approved offer')
  t.match(unmatched.message, new RegExp(`match\\('${unmatched.offerId}'\\)`), 'and says how to match it')
  t.equal(unmatched.code, 'match_not_answered', 'the match got no answer')

  const direct = new AgentCredit({ baseUrl: h.url, account: borrower })
  t.equal((await direct.offer(unmatched.offerId)).state, 'offered', 'the offer stands')
  const match = await direct.match(unmatched.offerId)
  t.equal(match.lease?.lender, lender.account.address, 'matching that offer later leases it')
})
