// The offer machine on its own, through XState's pure functions: which event each state takes, what it refuses and
// with which code, the guards' edges, and what each action writes.
import t from 'tap'
import { OFFER_STATES, offerMachine, offerRefusals, refusalCode, type OfferEvent, type OfferInput } from '../../machines/index.ts'
import { checkMatrix, run, start, step, type Snap } from './fixtures/pure.ts'

const T0 = 1_700_000_000_000
const TTL = 600_000
const L1 = '0x0000000000000000000000000000000000001001'
const L2 = '0x0000000000000000000000000000000000001002'
const input: OfferInput = {
  offerId: 'off_1', offerKey: `0x${'ab'.repeat(32)}`, borrower: '0x00000000000000000000000000000000000000b0', network: 'net-a', asset: 'USDC',
  productType: 'asset-backed', amountAtomic: 1000n, maximumFeeAtomic: 100n, purpose: 'p', supplier: 's', supplierDomain: 's.example',
  supplierAddress: '0x0000000000000000000000000000000000000050', source: { kind: 'backing', id: 'src_1' }, riskBand: 'A',
  durationSeconds: 3600, dueAtMs: T0 + 3_600_000, createdAtMs: T0, expiresAtMs: T0 + TTL,
}
const lease = (leaseId: string, lender: `0x${string}` = L1, nowMs = T0): OfferEvent => ({ type: 'LEASE', leaseId, lender, chainTimeMs: nowMs, nowMs })

const offered = start(offerMachine, input)
const leased = run(offerMachine, offered, lease('lse_1'))
const states: Record<string, Snap> = {
  offered,
  leased,
  closing: run(offerMachine, leased, { type: 'DECLINE', reason: 'borrower_suspended', nowMs: T0 }),
  funded: run(offerMachine, leased, { type: 'FUND', advanceId: 'adv_1', nowMs: T0 }),
  expired: run(offerMachine, offered, { type: 'EXPIRE', reason: 'leases_exhausted', chainTimeMs: T0, nowMs: T0 }),
  declined: run(offerMachine, offered, { type: 'DECLINE', reason: 'borrower_suspended', nowMs: T0 }),
}
const events: Record<string, OfferEvent> = {
  LEASE: lease('lse_2', L2),
  LEASE_REFUSED: { type: 'LEASE_REFUSED', leaseId: 'lse_2', lender: L2, chainTimeMs: T0, nowMs: T0 },
  LEASE_ENDED: { type: 'LEASE_ENDED', leaseId: 'lse_1', lender: L1, chainTimeMs: T0, nowMs: T0 },
  FUND: { type: 'FUND', advanceId: 'adv_1', nowMs: T0 },
  EXPIRE: { type: 'EXPIRE', reason: 'stale', chainTimeMs: T0 + TTL, nowMs: T0 + TTL },
  DECLINE: { type: 'DECLINE', reason: 'source_closed', nowMs: T0 },
}
const finalRow = {
  LEASE: { refused: 'offer_not_offered' }, LEASE_REFUSED: { refused: 'offer_not_offered' }, LEASE_ENDED: { refused: 'offer_not_leased' },
  FUND: { refused: 'offer_not_leased' }, EXPIRE: { refused: 'offer_not_offered' }, DECLINE: { refused: 'offer_closed' },
}

t.test('every event in every state: taken, or refused with the table\'s code', async (t) => {
  t.same([...OFFER_STATES].sort(), Object.keys(offerMachine.states).sort(), 'OFFER_STATES lists the machine\'s states')
  checkMatrix(t, offerMachine, offerRefusals, states, events, {
    offered: {
      LEASE: { to: 'leased' }, LEASE_REFUSED: { to: 'offered' }, LEASE_ENDED: { refused: 'offer_not_leased' },
      FUND: { to: 'funded' }, EXPIRE: { to: 'expired' }, DECLINE: { to: 'declined' },
    },
    leased: {
      LEASE: { refused: 'offer_not_offered' }, LEASE_REFUSED: { refused: 'offer_not_offered' }, LEASE_ENDED: { to: 'offered' },
      FUND: { to: 'funded' }, EXPIRE: { refused: 'offer_not_offered' }, DECLINE: { to: 'closing' },
    },
    closing: {
      LEASE: { refused: 'offer_not_offered' }, LEASE_REFUSED: { refused: 'offer_not_offered' }, LEASE_ENDED: { to: 'declined' },
      FUND: { to: 'funded' }, EXPIRE: { refused: 'offer_not_offered' }, DECLINE: { refused: 'offer_closed' },
    },
    funded: finalRow,
    expired: finalRow,
    declined: finalRow,
  })
})

t.test('EXPIRE: stale from the expiry instant on; out of leases at any time, but a stale offer ends stale', async (t) => {
  t.equal(step(offerMachine, offered, { type: 'EXPIRE', reason: 'stale', chainTimeMs: T0 + TTL - 1, nowMs: T0 + TTL - 1 }), undefined, 'one ms before the expiry: refused')
  t.equal(offerRefusals.EXPIRE.guarded, 'offer_not_due')
  const stale = step(offerMachine, offered, { type: 'EXPIRE', reason: 'stale', chainTimeMs: T0 + TTL, nowMs: T0 + TTL }) as Snap
  t.match(stale, { value: 'expired', context: { endReason: 'stale', endedAtMs: T0 + TTL, currentLeaseId: null } })
  const out = step(offerMachine, offered, { type: 'EXPIRE', reason: 'leases_exhausted', chainTimeMs: T0, nowMs: T0 }) as Snap
  t.match(out, { value: 'expired', context: { endReason: 'leases_exhausted', endedAtMs: T0 } })
  const late = step(offerMachine, offered, { type: 'EXPIRE', reason: 'leases_exhausted', chainTimeMs: T0 + TTL, nowMs: T0 + TTL }) as Snap
  t.match(late, { value: 'expired', context: { endReason: 'stale' } }, 'past its TTL, the offer ended stale whatever else ran out')
})

t.test('LEASE and LEASE_REFUSED: taken before the expiry instant, refused as stale from it on', async (t) => {
  t.equal(step(offerMachine, offered, lease('lse_2', L2, T0 + TTL - 1))?.value, 'leased', 'one ms before the expiry')
  t.equal(step(offerMachine, offered, lease('lse_2', L2, T0 + TTL)), undefined, 'at the expiry instant')
  t.equal(step(offerMachine, offered, { type: 'LEASE_REFUSED', leaseId: 'lse_2', lender: L2, chainTimeMs: T0 + TTL, nowMs: T0 + TTL }), undefined)
  t.equal(refusalCode(offerMachine, offerRefusals, 'offered', 'LEASE'), 'offer_stale', 'a stale offer answers offer_stale')
  t.equal(refusalCode(offerMachine, offerRefusals, 'leased', 'LEASE'), 'offer_not_offered', 'a leased one offer_not_offered')
})

const leaseEnded = (leaseId: string, chainTimeMs: number, nowMs = chainTimeMs): OfferEvent => ({ type: 'LEASE_ENDED', leaseId, lender: L1, chainTimeMs, nowMs })

t.test('LEASE_ENDED is taken for the current lease only', async (t) => {
  t.equal(step(offerMachine, leased, leaseEnded('lse_9', T0)), undefined, 'another lease')
  t.equal(step(offerMachine, leased, leaseEnded('lse_9', T0 + TTL)), undefined, 'another lease, past the expiry')
  t.equal(offerRefusals.LEASE_ENDED.guarded, 'lease_not_current')
  const ended = step(offerMachine, leased, leaseEnded('lse_1', T0)) as Snap
  t.match(ended, { value: 'offered', context: { currentLeaseId: null, excludedLenders: [L1], leaseIds: ['lse_1'], endReason: null, endedAtMs: null } })
})

t.test('LEASE_ENDED from the expiry instant on: the offer expires stale in that one transition, as an EXPIRE after it would end it', async (t) => {
  t.equal(step(offerMachine, leased, leaseEnded('lse_1', T0 + TTL - 1))?.value, 'offered', 'one ms before the expiry: waiting again')
  const atExpiry = step(offerMachine, leased, leaseEnded('lse_1', T0 + TTL, T0 + TTL + 7)) as Snap
  t.equal(atExpiry.status, 'done')
  // The two-step path it replaces, on the same instants: back to waiting, then the expiry pass's EXPIRE.
  const waiting = run(offerMachine, leased, leaseEnded('lse_1', T0 + TTL - 1, T0 + TTL + 7))
  const expiredLater = run(offerMachine, waiting, { type: 'EXPIRE', reason: 'stale', chainTimeMs: T0 + TTL, nowMs: T0 + TTL + 7 })
  t.same({ value: atExpiry.value, context: atExpiry.context }, { value: expiredLater.value, context: expiredLater.context }, 'the same state and context as LEASE_ENDED then EXPIRE')
  t.match(atExpiry, { value: 'expired', context: { endReason: 'stale', endedAtMs: T0 + TTL + 7, currentLeaseId: null, excludedLenders: [L1] } })
  t.equal(step(offerMachine, leased, leaseEnded('lse_1', T0 + 2 * TTL))?.value, 'expired', 'long past the expiry')
})

t.test('each action writes what its event carries', async (t) => {
  t.match(leased.context, { currentLeaseId: 'lse_1', leaseIds: ['lse_1'], excludedLenders: [] })
  const refused = step(offerMachine, offered, events['LEASE_REFUSED'] as OfferEvent) as Snap
  t.same(refused.context, { ...offered.context, leaseIds: ['lse_2'], excludedLenders: [L2] })
  const funded = states['funded'] as Snap
  t.same(funded.context, { ...leased.context, advanceId: 'adv_1', endedAtMs: T0 })
  t.same((states['declined'] as Snap).context, { ...offered.context, endReason: 'borrower_suspended', endedAtMs: T0, currentLeaseId: null })
  const declinedLeased = step(offerMachine, leased, { type: 'DECLINE', reason: 'source_closed', nowMs: T0 + 1 }) as Snap
  t.match(declinedLeased, { value: 'closing', context: { endReason: 'source_closed', currentLeaseId: 'lse_1', leaseIds: ['lse_1'], endedAtMs: null } }, 'withdrawn under its lease: closing')
})

t.test('withdrawn under a lease: closing keeps the lease until it ends (declined) or is paid (funded)', async (t) => {
  const closing = states['closing'] as Snap
  t.match(closing, { value: 'closing', context: { currentLeaseId: 'lse_1', endReason: 'borrower_suspended', endedAtMs: null } })
  t.equal(step(offerMachine, closing, leaseEnded('lse_9', T0)), undefined, 'another lease')
  const ended = step(offerMachine, closing, leaseEnded('lse_1', T0 + 5)) as Snap
  t.match(ended, { value: 'declined', context: { currentLeaseId: null, endReason: 'borrower_suspended', endedAtMs: T0 + 5, excludedLenders: [] } }, 'no lender excluded')
  const pastExpiry = step(offerMachine, closing, leaseEnded('lse_1', T0 + TTL)) as Snap
  t.match(pastExpiry, { value: 'declined', context: { endReason: 'borrower_suspended' } }, 'withdrawn: declined, even past its expiry')
  const paid = step(offerMachine, closing, { type: 'FUND', advanceId: 'adv_1', nowMs: T0 + 6 }) as Snap
  t.match(paid, { value: 'funded', context: { advanceId: 'adv_1', endReason: null, endedAtMs: T0 + 6 } })
})
