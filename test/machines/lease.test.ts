// The lease machine on its own, through XState's pure functions: which event each state takes, what it refuses and
// with which code, the expiry guard's edge, and what each action writes.
import t from 'tap'
import { LEASE_STATES, leaseMachine, leaseRefusals, type LeaseEvent, type LeaseInput } from '../../machines/index.ts'
import { checkMatrix, run, start, step, type Snap } from './fixtures/pure.ts'

const T0 = 1_700_000_000_000
const TTL = 30_000
const input: LeaseInput = {
  leaseId: 'lse_1', offerId: 'off_1', lender: '0x0000000000000000000000000000000000001001',
  payer: '0x0000000000000000000000000000000000002001', network: 'net-a', asset: 'USDC', amountAtomic: 1000n, feeAtomic: 10n,
  supplierAddress: '0x0000000000000000000000000000000000000050', createdAtMs: T0, expiresAtMs: T0 + TTL,
}
const payment = { network: 'net-a', txHash: `0x${'3'.padStart(64, '0')}`, logIndex: 2 } as const

const leased = start(leaseMachine, input)
const states: Record<string, Snap> = {
  leased,
  paid: run(leaseMachine, leased, { type: 'PAY', payment, nowMs: T0 }),
  expired: run(leaseMachine, leased, { type: 'CANCEL', nowMs: T0 }),
}
const events: Record<string, LeaseEvent> = {
  PAY: { type: 'PAY', payment, nowMs: T0 + 1 },
  TIME_OUT: { type: 'TIME_OUT', chainTimeMs: T0 + TTL + 1000, nowMs: T0 + TTL + 1000 },
  INSUFFICIENT_BALANCE: { type: 'INSUFFICIENT_BALANCE', nowMs: T0 },
  CANCEL: { type: 'CANCEL', nowMs: T0 },
}
const notLive = { refused: 'lease_not_live' }
const finalRow = { PAY: notLive, TIME_OUT: notLive, INSUFFICIENT_BALANCE: notLive, CANCEL: notLive }

t.test('every event in every state: taken, or refused with the table\'s code', async (t) => {
  t.same([...LEASE_STATES].sort(), Object.keys(leaseMachine.states).sort(), 'LEASE_STATES lists the machine\'s states')
  checkMatrix(t, leaseMachine, leaseRefusals, states, events, {
    leased: { PAY: { to: 'paid' }, TIME_OUT: { to: 'expired' }, INSUFFICIENT_BALANCE: { to: 'expired' }, CANCEL: { to: 'expired' } },
    paid: finalRow,
    // a payment reported after the lease expired is refused as such (spec section 3)
    expired: { ...finalRow, PAY: { refused: 'lease_expired' } },
  })
})

t.test('TIME_OUT: refused until the observed chain time is past the deadline second, taken from then on', async (t) => {
  // The contract accepts a payment while block.timestamp <= deadline = floor(expiresAtMs / 1000).
  const late = T0 + 10 * 365 * 24 * 3600_000
  t.equal(step(leaseMachine, leased, { type: 'TIME_OUT', chainTimeMs: T0 + TTL, nowMs: late }), undefined, 'chain at the deadline: a payment can still be mined, whatever the service clock says')
  t.equal(step(leaseMachine, leased, { type: 'TIME_OUT', chainTimeMs: T0 + TTL + 999, nowMs: late }), undefined, 'chain still within the deadline second')
  t.equal(leaseRefusals.TIME_OUT.guarded, 'lease_not_due')
  t.match(step(leaseMachine, leased, { type: 'TIME_OUT', chainTimeMs: T0 + TTL + 1000, nowMs: T0 + 1 }), { value: 'expired', context: { endReason: 'timeout', endedAtMs: T0 + 1 } }, 'the next chain second: expired, even with the service clock behind')
  const midSecond = start(leaseMachine, { ...input, expiresAtMs: T0 + TTL + 400 })
  t.equal(step(leaseMachine, midSecond, { type: 'TIME_OUT', chainTimeMs: T0 + TTL + 999, nowMs: late }), undefined, 'a deadline mid-second lasts to the end of its second')
  t.equal(step(leaseMachine, midSecond, { type: 'TIME_OUT', chainTimeMs: T0 + TTL + 1000, nowMs: late })?.value, 'expired')
  t.equal(step(leaseMachine, leased, { type: 'PAY', payment, nowMs: late })?.value, 'paid', 'a payment is taken while the lease lives, however late it is reported')
})

t.test('each action writes what its event carries', async (t) => {
  t.same((states['paid'] as Snap).context, { ...leased.context, payment, endedAtMs: T0 })
  t.same((states['expired'] as Snap).context, { ...leased.context, endReason: 'offer_closed', endedAtMs: T0 })
  const refused = step(leaseMachine, leased, { type: 'INSUFFICIENT_BALANCE', nowMs: T0 + 5 }) as Snap
  t.same(refused.context, { ...leased.context, endReason: 'insufficient_balance', endedAtMs: T0 + 5 })
})
