// review29: the in-flight mark of a payment the facilitator was asked to settle binds the settlement to the request
// that asked for it (outsider26: its digest of the subject and public key). While that settlement waits in a public
// mempool (broadcast, not mined: settlement_pending), the payment verifies again as unused, so a stranger who rebuilt
// it from the pending transaction's calldata and sent it with its own subject and key reached the settle, whose
// attempt overwrote the mark with the stranger's digest: the payer's settlement, mined, then bought the stranger's
// score, and the payer's retry was refused payment_already_used. Now a mark for another digest refuses the attempt
// (PaidResource answers 402 payment_already_used and settles nothing), and the mark stays the payer's.
// Fails without the fix: the second attempt resolves.
import t from 'tap'
import type { PaymentPayload } from '@x402/core/types'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { FrontRunSettlements, SettlementOwedElsewhereError } from '../../src/x402/front-run.ts'

const payload = {
  x402Version: 2,
  payload: {
    signature: `0x${'11'.repeat(65)}`,
    authorization: { from: `0x${'aa'.repeat(20)}`, to: `0x${'bb'.repeat(20)}`, value: '1000', validAfter: '0', validBefore: '4000000000', nonce: `0x${'cc'.repeat(32)}` },
  },
} as unknown as PaymentPayload

t.test('a payment marked for one request cannot be marked for another', async (t) => {
  const settlements = new FrontRunSettlements({ network: { slug: 'b' } as NetworkConfig, client: {} as never, facilitator: {} as never, confirmationTimeoutMs: 60_000 })
  await settlements.attempt(payload, 60, 'payer-digest')
  await settlements.broadcast(payload, `0x${'dd'.repeat(32)}`)
  await t.rejects(settlements.attempt(payload, 60, 'stranger-digest'), SettlementOwedElsewhereError, 'another subject or key: refused')
  await t.resolves(settlements.attempt(payload, 60, 'payer-digest'), 'the payer\'s own request again: marked')
  await t.rejects(settlements.attempt(payload, 60, 'stranger-digest'), SettlementOwedElsewhereError, 'still the payer\'s')
  t.ok(settlements.markedForOther(payload, 'stranger-digest'), 'refused at admission too, before the work is done')
  t.notOk(settlements.markedForOther(payload, 'payer-digest'), 'the payer\'s request is admitted')
  const mark = (settlements as unknown as { undelivered: Map<string, { request?: string; transaction?: string }> }).undelivered.values().next().value
  t.equal(mark?.request, 'payer-digest')
  t.equal(mark?.transaction, `0x${'dd'.repeat(32)}`, 'the broadcast\'s hash is kept by the payer\'s retry')
})
