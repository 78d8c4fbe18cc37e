// The cross-actor steps of the engine's commands: which actor events and creations one command makes, in the order
// the code in engine.ts makes them, and which records it writes. This is the one part of the system map
// (machines/diagrams/system.md) that cannot be read off the machines: the engine's code paths decide it. It is
// declared here, beside the engine, and test/engine/steps.test.ts runs every path with the engine instrumented and
// fails when what the engine does and what this says differ (a step missing here, or declared and never taken).
import type { ActorKind, RecordKind } from './types.ts'

/** An actor event the command sends (`event` is the machine's event type), or `created` for a new actor. */
export interface ActorStep {
  readonly kind: ActorKind
  readonly event: string
}

/** One code path of a command: its first step causes the others. */
export interface EnginePath {
  /** The Engine method. */
  readonly command: string
  /** When the path is taken, in a few words (a command may have several). */
  readonly when: string
  readonly steps: readonly ActorStep[]
  /**
   * Records the path writes (lender, borrower, backing source, insurance reserve; the id sequences are left out). A
   * backing source's committed capacity is not written: the restore derives it (src/engine/capacity.ts).
   */
  readonly records: readonly RecordKind[]
}

const step = (kind: ActorKind, event: string): ActorStep => ({ kind, event })

export const ENGINE_PATHS: readonly EnginePath[] = [
  { command: 'createJob', when: 'a funded job is reported', steps: [step('job', 'created')], records: ['borrower'] },
  { command: 'postCollateral', when: 'collateral is reported', steps: [step('job', 'COLLATERAL_POSTED')], records: [] },
  { command: 'requestCredit', when: 'approved against a job', steps: [step('offer', 'created'), step('job', 'COMMIT')], records: [] },
  { command: 'requestCredit', when: 'approved against a backing source', steps: [step('offer', 'created')], records: [] },
  { command: 'matchOffer', when: 'a lender is leased', steps: [step('offer', 'LEASE'), step('lease', 'created')], records: ['lender'] },
  {
    command: 'matchOffer', when: 'a lender\'s wallet cannot pay: its lease is born expired',
    steps: [step('offer', 'LEASE'), step('lease', 'created'), step('lease', 'INSUFFICIENT_BALANCE')], records: [],
  },
  { command: 'matchOffer', when: 'no lender and the offer is stale', steps: [step('offer', 'EXPIRE'), step('job', 'RELEASE')], records: [] },
  {
    command: 'recordSupplierPayment', when: 'the leased lender paid the supplier (the maximum fee not charged goes back to the source)',
    steps: [step('offer', 'FUND'), step('lease', 'PAY'), step('advance', 'created'), step('job', 'ADVANCE_OPENED'), step('job', 'RELEASE')], records: ['lender', 'borrower'],
  },
  { command: 'repayAdvance', when: 'a Repaid transaction is reported', steps: [step('advance', 'REPAY'), step('job', 'ADVANCE_CLOSED')], records: ['lender', 'borrower', 'reserve'] },
  { command: 'completeJob', when: 'the job is settled on chain (its waiting offers are declined)', steps: [step('job', 'COMPLETE'), step('advance', 'REPAY'), step('offer', 'DECLINE')], records: ['lender', 'borrower', 'reserve'] },
  {
    command: 'failJob', when: 'the job failed: the borrower is suspended, its offers withdrawn (a leased one is closing)',
    steps: [step('job', 'FAIL'), step('offer', 'DECLINE'), step('job', 'RELEASE'), step('advance', 'DEFAULT')],
    records: ['borrower', 'lender'],
  },
  { command: 'liquidate', when: 'a defaulted or past-due advance is recovered', steps: [step('advance', 'LIQUIDATE'), step('job', 'ADVANCE_CLOSED')], records: ['lender', 'borrower', 'reserve', 'source'] },
  {
    command: 'observeChain', when: 'the follower saw the SupplierPaid of a leased offer (the maximum fee not charged goes back to the source)',
    steps: [step('offer', 'FUND'), step('lease', 'PAY'), step('advance', 'created'), step('job', 'ADVANCE_OPENED'), step('job', 'RELEASE')], records: ['lender'],
  },
  { command: 'observeChain', when: 'the follower saw a CollateralPosted of a live job (reported or not)', steps: [step('job', 'COLLATERAL_POSTED')], records: [] },
  { command: 'observeChain', when: 'the chain is observed past a lease\'s deadline, unpaid', steps: [step('lease', 'TIME_OUT'), step('offer', 'LEASE_ENDED')], records: ['lender'] },
  {
    command: 'observeChain', when: 'the chain is observed past a lease\'s deadline, unpaid, and at or past its offer\'s expiry: the offer expires with it',
    steps: [step('lease', 'TIME_OUT'), step('offer', 'LEASE_ENDED'), step('job', 'RELEASE')], records: ['lender'],
  },
  {
    command: 'observeChain', when: 'a closing offer was paid before its failed job\'s failJob: the advance is born defaulted',
    steps: [step('offer', 'FUND'), step('lease', 'PAY'), step('advance', 'created'), step('job', 'ADVANCE_OPENED'), step('advance', 'DEFAULT')],
    records: ['lender', 'borrower'],
  },
  {
    command: 'observeChain', when: 'the chain is observed past a closing offer\'s lease deadline, unpaid: no penalty, the offer ends declined',
    steps: [step('lease', 'CANCEL'), step('offer', 'LEASE_ENDED'), step('job', 'RELEASE')], records: ['lender'],
  },
  { command: 'dispatch', when: 'a waiting offer is stale', steps: [step('offer', 'EXPIRE'), step('job', 'RELEASE')], records: [] },
  { command: 'dispatch', when: 'a waiting offer is matched', steps: [step('offer', 'LEASE'), step('lease', 'created')], records: ['lender'] },
]
