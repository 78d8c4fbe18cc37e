// outsider23: one request sent many times at once. A match of one offer, a lender's supplier payment and a borrower's
// full repayment are each sent 8 times pipelined on one connection (one write) and 8 times on separate connections, with no key,
// with Idempotency-Keys differing only by case, and with the transaction hash in upper-case hex. Exactly one report
// of each may count: one lease, one advance, one repayment, leasesPaid 1, advancesRepaid 1, one advance_repaid in the passport,
// the reconciliation clean. Exits 1 on any double count. Holds (exit 0): every report answers 200 with the one advance
// (repayment), counted once.
// node --import tsx test/api/outsider23-scripts/pipelined-same-request.ts
import { privateKeyToAccount } from 'viem/accounts'
import { ChainAgent } from '../../../src/client/chain.ts'
import { creditRequest, fund, fundedJob, readyLender, signedIn, startHarness, usdc } from '../../fixtures/service.ts'
import { answersTo, type RawResponse } from '../../http/fixtures/raw.ts'
import { actionFor } from '../fixtures/api.ts'

const h = await startHarness()
let bad = 0
const fail = (what: string, detail: unknown) => {
  bad++
  console.log('DIFFERENCE:', what, JSON.stringify(detail))
}
const upperHex = (hash: string) => `0x${hash.slice(2).toUpperCase()}`

/** `count` POSTs of `body` to `path` on one connection, written at once. */
async function pipelined(token: string, path: string, bodies: unknown[], keys: Array<string | undefined>): Promise<RawResponse[]> {
  const port = Number(new URL(h.url).port)
  const request = bodies.map((body, i) => {
    const json = JSON.stringify(body)
    const key = keys[i] === undefined ? '' : `Idempotency-Key: ${keys[i]}\r\n`
    return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n${key}Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
  }).join('')
  return (await answersTo(port, [request], bodies.length, false)).answers
}

const summary = (answers: Array<{ status: number; body: unknown }>) => answers.map((a) => `${a.status} ${typeof a.body === 'string' ? (JSON.parse(a.body || '{}').code ?? '') : ((a.body as any)?.code ?? '')}`).join(', ')

try {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o23_pipelined'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(50), usdc(3)))
  const offerId = decision.body.offer.offerId as string
  // The match sent 16 times at once too: one lease.
  const matchBodies = Array.from({ length: 8 }, () => ({ offerId }))
  const [matchOne, ...matchSeparate] = await Promise.all([
    pipelined(borrowerClient.token as string, '/credit/match', matchBodies, matchBodies.map((_, i) => (i < 4 ? undefined : i % 2 === 0 ? 'match-key' : 'MATCH-KEY'))),
    ...matchBodies.map((body, i) => borrowerClient.post('/credit/match', body, i < 4 ? {} : { idempotencyKey: i % 2 === 0 ? 'match-Key' : 'MATCH-kEY' })),
  ])
  console.log('match, pipelined:', summary(matchOne!))
  console.log('match, separate: ', summary(matchSeparate as any))
  const matches = [...matchOne!.map((a) => JSON.parse(a.body || '{}')), ...(matchSeparate as any[]).map((a) => a.body)]
  const leaseIds = new Set(matches.map((m) => m.lease?.leaseId).filter((id) => id !== undefined))
  if (leaseIds.size !== 1) fail('leases from one offer', [...leaseIds])
  if (h.app.service.engine.getLender(lender.account.address)!.leasesGranted !== 1) fail('leasesGranted', h.app.service.engine.getLender(lender.account.address)!.leasesGranted)
  const action = await actionFor(lender, offerId)
  const paymentTx = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const path = `/credit/offers/${offerId}/supplier-payment`
  const bodies = Array.from({ length: 8 }, (_, i) => ({ lender: lender.account.address, supplierPaymentId: i % 2 === 0 ? paymentTx : upperHex(paymentTx) }))
  const token = lender.client.token as string
  const [onOne, ...separate] = await Promise.all([
    pipelined(token, path, bodies, bodies.map((_, i) => (i < 4 ? undefined : i % 2 === 0 ? 'pay-key' : 'PAY-KEY'))),
    ...bodies.map((body, i) => lender.client.post(path, body, i < 4 ? {} : { idempotencyKey: i % 2 === 0 ? 'pay-Key' : 'PAY-kEY' })),
  ])
  console.log('supplier payment, pipelined:', summary(onOne!))
  console.log('supplier payment, separate: ', summary(separate as any))
  const all = [...onOne!.map((a) => ({ status: a.status, body: JSON.parse(a.body || '{}') })), ...(separate as any[])]
  const advanceIds = new Set(all.filter((a) => a.status === 200).map((a) => a.body.advanceId))
  if (advanceIds.size !== 1) fail('advances from one payment', [...advanceIds])
  const advanceId = [...advanceIds][0] as string
  const lenderRecord = h.app.service.engine.getLender(lender.account.address)!
  console.log('lender:', { leasesPaid: lenderRecord.leasesPaid, reputationBps: lenderRecord.reputationBps })
  if (lenderRecord.leasesPaid !== 1) fail('leasesPaid', lenderRecord.leasesPaid)

  // The borrower repays all of it, then reports it 16 times.
  await fund(h.devnet, h.network, borrower.address, usdc(100))
  const served = await borrowerClient.get(`/credit/advances/${advanceId}/repay-transactions`)
  const sent = await new ChainAgent(h.network, borrower).sendAll(served.body.transactions)
  const repayTx = sent[sent.length - 1] as string
  const repayPath = `/credit/advances/${advanceId}/repay`
  const repayBodies = Array.from({ length: 8 }, (_, i) => ({ txHash: i % 2 === 0 ? repayTx : upperHex(repayTx) }))
  const borrowerToken = borrowerClient.token as string
  // A stranger's session reports it too (any session may).
  const stranger = await signedIn(h.url, privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'))
  const [repOne, ...repSeparate] = await Promise.all([
    pipelined(borrowerToken, repayPath, repayBodies, repayBodies.map((_, i) => (i < 4 ? undefined : i % 2 === 0 ? 'rep-key' : 'REP-KEY'))),
    ...repayBodies.map((body, i) => (i % 3 === 0 ? stranger : borrowerClient).post(repayPath, body, i < 4 ? {} : { idempotencyKey: i % 2 === 0 ? 'rep-Key' : 'REP-kEY' })),
  ])
  console.log('repayment, pipelined:', summary(repOne!))
  console.log('repayment, separate: ', summary(repSeparate as any))
  const advance = (await borrowerClient.get(`/credit/advances/${advanceId}`)).body
  console.log('advance:', advance.state, 'repayments', advance.repayments.length, 'lenderOwed', advance.lenderOwedAtomic)
  if (advance.repayments.length !== 1) fail('repayments counted', advance.repayments.length)
  const borrowerRecord = h.app.service.engine.getBorrower(borrower.address)!
  console.log('borrower:', { advancesRepaid: borrowerRecord.advancesRepaid, reputationBps: borrowerRecord.reputationBps })
  if (borrowerRecord.advancesRepaid !== 1) fail('advancesRepaid', borrowerRecord.advancesRepaid)
  const passport = (await borrowerClient.get(`/passport/${borrower.address}`)).body as Array<{ kind: string }>
  console.log('passport:', passport.map((e) => e.kind).join(', '))
  if (passport.filter((e) => e.kind === 'advance_repaid').length !== 1) fail('advance_repaid entries', passport.map((e) => e.kind))
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const reconciled = await operator.post('/operator/reconcile', { network: h.network.slug })
  const differences = reconciled.body.networks?.[0]?.differences
  console.log('reconciliation differences:', JSON.stringify(differences))
  if (!Array.isArray(differences) || differences.length > 0) fail('reconciliation', differences)
} finally {
  await h.stop()
}
console.log(bad === 0 ? 'no double count found' : `${bad} difference(s)`)
process.exit(bad === 0 ? 0 : 1)
