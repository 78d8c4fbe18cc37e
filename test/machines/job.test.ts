// The job machine on its own, through XState's pure functions: which event each state takes, what it refuses and
// with which code, the guards' edges, and what each action writes.
import t from 'tap'
import { JOB_STATES, jobMachine, jobRefusals, type JobEvent, type JobInput } from '../../machines/index.ts'
import { checkMatrix, run, start, step, type Snap } from './fixtures/pure.ts'
import { legacyJobKey } from '../../src/chain/ids.ts'

const T0 = 1_700_000_000_000
const input: JobInput = {
  jobId: 'job_1', jobKey: legacyJobKey('job_1'), client: '0x00000000000000000000000000000000000000c0', borrower: '0x00000000000000000000000000000000000000b0',
  network: 'net-a', asset: 'USDC', receivableAtomic: 10_000n, dueAtMs: T0 + 86_400_000, createdAtMs: T0,
  funding: { network: 'net-a', txHash: `0x${'1'.padStart(64, '0')}`, logIndex: 0 },
}
const settlement = { network: 'net-a', txHash: `0x${'2'.padStart(64, '0')}` } as const
const opened = (advanceId: string): JobEvent => ({ type: 'ADVANCE_OPENED', advanceId, nowMs: T0 })
const closed = (advanceId: string, committedAtomic = 100n): JobEvent => ({
  type: 'ADVANCE_CLOSED', advanceId, committedAtomic, revenueUsedAtomic: 10n, collateralUsedAtomic: 5n, nowMs: T0,
})

const funded = start(jobMachine, input)
// The engine commits an offer's principal before its advance opens (the job's committed capacity includes it).
const active = run(jobMachine, funded, { type: 'COMMIT', amountAtomic: 100n, nowMs: T0 }, opened('adv_1'))
const states: Record<string, Snap> = {
  funded,
  active,
  defaulted: run(jobMachine, active, { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 0n, nowMs: T0 }),
  completed: run(jobMachine, funded, { type: 'COMPLETE', settlement, nowMs: T0 }),
  failed: run(jobMachine, funded, { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 0n, nowMs: T0 }),
}
const events: Record<string, JobEvent> = {
  COLLATERAL_POSTED: { type: 'COLLATERAL_POSTED', amountAtomic: 5n, nowMs: T0 },
  COMMIT: { type: 'COMMIT', amountAtomic: 5n, nowMs: T0 },
  RELEASE: { type: 'RELEASE', amountAtomic: 5n, nowMs: T0 },
  ADVANCE_OPENED: opened('adv_2'),
  ADVANCE_CLOSED: closed('adv_1'),
  COMPLETE: { type: 'COMPLETE', settlement, nowMs: T0 },
  FAIL: { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 0n, nowMs: T0 },
}
const notOpen = { refused: 'job_not_open' }
const finalRow = Object.fromEntries(Object.keys(events).map((e) => [e, notOpen]))

t.test('every event in every state: taken, or refused with the table\'s code', async (t) => {
  t.same([...JOB_STATES].sort(), Object.keys(jobMachine.states).sort(), 'JOB_STATES lists the machine\'s states')
  checkMatrix(t, jobMachine, jobRefusals, states, events, {
    funded: {
      COLLATERAL_POSTED: { to: 'funded' }, COMMIT: { to: 'funded' }, RELEASE: { to: 'funded' }, ADVANCE_OPENED: { to: 'active' },
      ADVANCE_CLOSED: notOpen, COMPLETE: { to: 'completed' }, FAIL: { to: 'failed' },
    },
    active: {
      COLLATERAL_POSTED: { to: 'active' }, COMMIT: { to: 'active' }, RELEASE: { to: 'active' }, ADVANCE_OPENED: { to: 'active' },
      ADVANCE_CLOSED: { to: 'funded' }, COMPLETE: { to: 'completed' }, FAIL: { to: 'defaulted' },
    },
    defaulted: {
      COLLATERAL_POSTED: { to: 'defaulted' }, COMMIT: notOpen, RELEASE: { to: 'defaulted' }, ADVANCE_OPENED: { to: 'defaulted' },
      ADVANCE_CLOSED: { to: 'failed' }, COMPLETE: notOpen, FAIL: notOpen,
    },
    completed: finalRow,
    failed: finalRow,
  })
})

t.test('ADVANCE_CLOSED: the last open advance frees the job, another open one keeps it, an unknown one is refused', async (t) => {
  const two = run(jobMachine, active, opened('adv_2'))
  const oneClosed = step(jobMachine, two, closed('adv_1'))
  t.equal(oneClosed?.value, 'active', 'adv_2 is still open: the job stays active')
  t.same(oneClosed?.context.advanceIds, ['adv_2'])
  t.equal(step(jobMachine, oneClosed as Snap, closed('adv_2'))?.value, 'funded', 'the last one closed: funded again')
  t.equal(step(jobMachine, two, closed('adv_9')), undefined, 'an advance the job does not hold is refused')
  t.equal(jobRefusals.ADVANCE_CLOSED.guarded, 'advance_not_on_job')
  const defaulted = states['defaulted'] as Snap
  t.equal(step(jobMachine, defaulted, closed('adv_9')), undefined, 'also once defaulted')
  t.equal(step(jobMachine, defaulted, closed('adv_1'))?.value, 'failed', 'the last open advance of a defaulted job ends it')
})

t.test('a failed job with offers closing stays defaulted until the last one ends or its advance is recovered', async (t) => {
  const committed = run(jobMachine, funded, { type: 'COMMIT', amountAtomic: 300n, nowMs: T0 })
  t.equal(step(jobMachine, committed, { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 300n, nowMs: T0 })?.value, 'failed', 'every offer released: final')
  const closing = step(jobMachine, committed, { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 100n, nowMs: T0 }) as Snap
  t.match(closing, { value: 'defaulted', context: { committedAtomic: 200n } }, '200 of closing offers keep it live')
  const oneEnded = step(jobMachine, closing, { type: 'RELEASE', amountAtomic: 50n, nowMs: T0 }) as Snap
  t.equal(oneEnded.value, 'defaulted')
  const paid = step(jobMachine, oneEnded, opened('adv_5')) as Snap
  t.match(paid, { value: 'defaulted', context: { advanceIds: ['adv_5'] } }, 'a closing offer paid: its advance is the job\'s')
  const released = step(jobMachine, paid, { type: 'RELEASE', amountAtomic: 50n, nowMs: T0 }) as Snap
  t.equal(released.value, 'defaulted', 'the advance is still open')
  t.equal(step(jobMachine, released, closed('adv_5', 100n))?.value, 'failed', 'the advance recovered and nothing closing: final')
  t.equal(step(jobMachine, oneEnded, { type: 'RELEASE', amountAtomic: 150n, nowMs: T0 })?.value, 'failed', 'the last closing offer ended: final')
})

t.test('each action writes what its event carries', async (t) => {
  const posted = step(jobMachine, funded, events['COLLATERAL_POSTED'] as JobEvent) as Snap
  t.equal(posted.context.collateralAtomic, 5n)
  const committed = step(jobMachine, funded, { type: 'COMMIT', amountAtomic: 700n, nowMs: T0 }) as Snap
  t.equal(committed.context.committedAtomic, 700n)
  t.equal((step(jobMachine, committed, { type: 'RELEASE', amountAtomic: 200n, nowMs: T0 }) as Snap).context.committedAtomic, 500n)
  const drawn = run(jobMachine, funded, { type: 'COMMIT', amountAtomic: 100n, nowMs: T0 }, opened('adv_1'))
  t.same(drawn.context.advanceIds, ['adv_1'])
  const back = step(jobMachine, drawn, closed('adv_1', 100n)) as Snap
  t.same(back.context, { ...drawn.context, advanceIds: [], committedAtomic: 0n, revenueUsedAtomic: 10n, collateralUsedAtomic: 5n })
  const done = step(jobMachine, drawn, { type: 'COMPLETE', settlement, nowMs: T0 + 7 }) as Snap
  t.same(done.context, { ...drawn.context, settlement, advanceIds: [], committedAtomic: 0n, endedAtMs: T0 + 7 })
  const failed = step(jobMachine, committed, { type: 'FAIL', reason: 'not_delivered', releasedAtomic: 300n, nowMs: T0 + 9 }) as Snap
  t.same(failed.context, { ...committed.context, committedAtomic: 400n, failureReason: 'not_delivered', endedAtMs: T0 + 9 }, 'the withdrawn offers\' capacity is released')
  t.equal(failed.value, 'defaulted', 'the 400 still committed are closing offers: the job is not final yet')
})
