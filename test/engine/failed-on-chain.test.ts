// The reserved failure reason failed_on_chain: only the service's repair of a failJob mined and never recorded (its
// `mined` flag, src/service/operator-commands.ts OperatorRepairs) gives it; a client's /fail cannot, so a failure the
// client named is never shown as one the service found on chain.
import t from 'tap'
import { FAILED_ON_CHAIN } from '../../src/engine/jobs.ts'
import { BORROWER, CLIENT, T0, createJob, newEngine, unwrap } from './fixtures/world.ts'

t.test('failed_on_chain is refused without the mined flag, taken with it', async (t) => {
  const { engine } = newEngine()
  createJob(engine, 'job_foc', 1_000_000n)
  const asked = { jobId: 'job_foc', reason: FAILED_ON_CHAIN, caller: CLIENT }
  for (const result of [engine.planJobFailure(asked), engine.failJob(asked, T0)]) {
    t.match(result, { ok: false, error: { class: 'invalid', code: 'failure_reason_reserved' } })
  }
  t.equal(engine.getJob('job_foc')?.state, 'funded', 'nothing changed')
  unwrap(engine.planJobFailure({ ...asked, mined: true }))
  const failed = unwrap(engine.failJob({ ...asked, mined: true }, T0))
  t.equal(failed.reason, FAILED_ON_CHAIN)
  t.equal(engine.getBorrower(BORROWER)?.suspended, true, 'the borrower is suspended, as by any failure')
})
