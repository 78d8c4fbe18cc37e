// A failure's reason is a code from the published list (JOB_FAILURE_REASONS), never a caller's text: the reason is
// signed into the borrower's public passport. A client's note reaches the engine only as its keccak256.
import t from 'tap'
import { keccak256, stringToBytes } from 'viem'
import { JOB_FAILURE_REASONS } from '../../machines/index.ts'
import type { JobFailureReason } from '../../machines/index.ts'
import { jobViewFromSnapshot } from '../../src/engine/views.ts'
import { BORROWER, CLIENT, T0, createJob, newEngine, unwrap } from './fixtures/world.ts'

t.test('a reason not in the list is refused (failure_reason_unknown) and changes nothing', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_txt', 1_000_000n)
  const asked = { jobId: 'job_txt', reason: 'this borrower is a scammer, see https://evil.example' as JobFailureReason, caller: CLIENT }
  for (const result of [engine.planJobFailure(asked), engine.failJob(asked, T0)]) {
    t.match(result, { ok: false, error: { class: 'invalid', code: 'failure_reason_unknown' } })
  }
  t.match(engine.getJob('job_txt'), { state: 'funded', failureReason: null }, 'nothing changed')
  t.equal(engine.getBorrower(BORROWER)?.suspended ?? false, false, 'the borrower is not suspended')
})

t.test('each client code is taken; a note is carried as its hash only', async (t) => {
  const clientCodes = JOB_FAILURE_REASONS.filter((r) => r !== 'escrow_reclaimed' && r !== 'failed_on_chain')
  t.same(clientCodes, ['not_delivered', 'late', 'defective', 'cancelled', 'other'])
  for (const reason of clientCodes) {
    const { engine } = newEngine()
    createJob(engine, `job_${reason}`, 1_000_000n)
    const noteHash = keccak256(stringToBytes(`note on ${reason}`))
    const failed = engine.failJob({ jobId: `job_${reason}`, reason, noteHash, caller: CLIENT }, T0)
    t.match(failed, { ok: true, value: { reason, noteHash } }, `${reason} taken`)
    // A failed job is final: its record is the change the failure wrote.
    const record = failed.ok ? failed.changes.find((c) => c.kind === 'job')?.record : undefined
    t.match(jobViewFromSnapshot(record), { state: 'failed', failureReason: reason, failureNoteHash: noteHash })
  }
  const { engine } = newEngine()
  createJob(engine, 'job_plain', 1_000_000n)
  t.match(unwrap(engine.failJob({ jobId: 'job_plain', reason: 'late', caller: CLIENT }, T0)), { reason: 'late', noteHash: null }, 'no note, no hash')
})
