// An outsider's finding (outsider26): a /credit-score payment the service's own facilitator broadcast while its
// request delivered nothing (the receipt unreadable; README "Credit score": 503, "the same payment sent again is
// answered from that settlement, once") was answered to whoever sent it first, whatever the body. The settlement's
// calldata is the payer's whole authorization and signature, public from the broadcast on, and the 402's
// PAYMENT-REQUIRED gives the rest of the x402 payload (test/api/outsider26-scripts/score-pending-stolen.ts rebuilds it
// from the chain alone): a stranger posting it during the payer's Retry-After, about another subject and with its own
// key, got that score for nothing, and the payer's retry was refused 402 payment_already_used, charged and never
// served. The rule now: the settlement owed to a request that delivered nothing buys only the work that request asked
// for (its subject and the key its answer is sealed to), also after a restart (the digest is in the stored mark).
// Fails without the fix: the stranger's request is answered 200 and the payer's retry 402.
// And a second finding on the same path: the payer's retry bought the score only while the chain's head was within
// maxTimeoutSeconds + 60 s of the settlement's block (about 2 minutes), and the lookup read only the last 2,000 blocks'
// logs: a retry after a longer RPC outage or restart (each retry meanwhile answered 503, "retry later") was refused
// 402 payment_already_used, the payer charged and never served. Now the mark lives a day longer
// (UNDELIVERED_RETRY_SECONDS) and keeps the broadcast's hash, read directly when the log window no longer holds it.
// Fails without that fix: the late retries are answered 402.
import t, { type Test } from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { createTestClient, http } from 'viem'
import { networkChain } from '../../src/chain/clients.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { proxiedScoreService } from '../x402/fixtures/proxied-score.ts'
import { creditScoreBody } from '../x402/fixtures/score-payment.ts'
import { postScore, undeliveredScore } from './fixtures/undelivered-score.ts'

const service = await proxiedScoreService(t)
const { h, b, balance } = service
const post = (body: unknown, header: string) => postScore(h.url, body, header)

/** A payer's score call whose settlement is broadcast and not delivered on (503), the settlement mined. */
async function undelivered(t: Test, sourceId: string) {
  const paid = await undeliveredScore(service, sourceId)
  t.equal(paid.first.status, 503, `nothing delivered on the payer's request: ${paid.first.status} ${paid.first.body.code}`)
  return paid
}

async function strangerKey() {
  return exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256', extractable: true })).publicKey)
}

t.test('a stranger presenting the broadcast payment with its own body gets nothing; the payer gets its score', async (t) => {
  const { body, header, payer, before } = await undelivered(t, 'o26-stolen-src')
  const other = (await creditScoreBody(h, 'o26-stolen-other')) as { subject: string }
  const stolen = await post(other, header)
  t.equal(stolen.status, 402, `another subject and key: refused (${stolen.status} ${stolen.body.code})`)
  t.equal(stolen.body.code, 'payment_already_used')
  const ownSubject = await post({ subject: body.subject, publicKey: await strangerKey() }, header)
  t.equal(ownSubject.status, 402, `the payer's subject with another key: refused (${ownSubject.status} ${ownSubject.body.code})`)
  const retry = await post(body, header)
  t.equal(retry.status, 200, `the payer's retry buys its score: ${retry.status} ${retry.body.code}`)
  t.equal(retry.body.subject, body.subject)
  t.type(retry.body.jwe, 'string')
  const again = await post(body, header)
  t.equal(again.status, 402, 'once')
  t.equal(await balance(payer), before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

t.test('the binding survives a restart between the broadcast and the retry', async (t) => {
  const { body, header } = await undelivered(t, 'o26-stolen-restart-src')
  await h.restart()
  const stolen = await post({ subject: body.subject, publicKey: await strangerKey() }, header)
  t.equal(stolen.status, 402, `after the restart, another key: refused (${stolen.status} ${stolen.body.code})`)
  // The same key with a kid of its own is the same recipient: the answer is sealed to the same key.
  const retry = await post({ ...body, publicKey: { ...body.publicKey, kid: 'payer-key-1' } }, header)
  t.equal(retry.status, 200, `the payer's retry after the restart buys its score: ${retry.status} ${retry.body.code}`)
})

t.test('the payer\'s retry is served however late within a day: after 10 minutes, and past the 2,000-block log window, across a restart', async (t) => {
  const test = createTestClient({ chain: networkChain(b), transport: http(b.rpcUrl, { timeout: 60_000 }), mode: 'anvil' })
  const later = async (seconds: number) => {
    await test.increaseTime({ seconds })
    for (let left = seconds; left > 0; left -= 250) await test.mine({ blocks: Math.min(250, left) })
  }
  // Both paid before the chain moves: the x402 client signs its validity window on the wall clock.
  const tenMinutes = await undelivered(t, 'o26-late-src')
  const farther = await undelivered(t, 'o26-late-src2')
  await later(600)
  const late = await post(tenMinutes.body, tenMinutes.header)
  t.equal(late.status, 200, `10 minutes later: ${late.status} ${late.body.code}`)
  t.equal((await post(tenMinutes.body, tenMinutes.header)).status, 402, 'once')

  await later(1900)
  await h.restart()
  const far = await post(farther.body, farther.header)
  t.equal(far.status, 200, `2,500 blocks later, after a restart: ${far.status} ${far.body.code}`)
  t.equal((await post(farther.body, farther.header)).status, 402, 'once')
  t.equal(await balance(farther.payer), farther.before - DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
