// The committed diagrams must be what `npm run diagrams` renders from the machines today.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { setup } from 'xstate'
import { diagramsDir, renderAll, renderDiagram } from '../../src/tools/diagrams.ts'

t.test('each committed diagram is up to date (run `npm run diagrams` after changing a machine)', async (t) => {
  for (const [name, page] of renderAll()) {
    const file = join(diagramsDir, `${name}.md`)
    t.ok(existsSync(file), `machines/diagrams/${name}.md exists`)
    if (existsSync(file)) t.equal(readFileSync(file, 'utf8'), page, `machines/diagrams/${name}.md is current`)
  }
})

t.test('the diagram is derived from the machine: initial, transitions with guards and actions, finals', async (t) => {
  const machine = setup({
    types: { events: {} as { type: 'GO' } | { type: 'STOP' } },
    actions: { note: () => {} },
    guards: { ready: () => true },
  }).createMachine({
    id: 'demo',
    initial: 'idle',
    states: { idle: { on: { GO: { guard: 'ready', target: 'busy', actions: 'note' } } }, busy: { on: { STOP: 'done' } }, done: { type: 'final' } },
  })
  const page = renderDiagram('demo', machine)
  t.match(page, /\[\*\] --> idle\n/)
  t.match(page, /idle --> busy: GO \[ready\] \/ note\n/)
  t.match(page, /busy --> done: STOP\n/)
  t.match(page, /done --> \[\*\]\n/)
})

t.test('each page lists when every event is taken and the code the machine refuses it with', async (t) => {
  const offer = renderAll().get('offer') ?? ''
  t.match(offer, /\| LEASE \| offered \[isFresh\] \| `offer_not_offered`; `offer_stale` where the guards say no \|/)
  t.match(offer, /\| LEASE_ENDED \| leased \[isCurrentLease\] \| `offer_not_leased`; `lease_not_current` where the guards say no \|/)
  const job = renderAll().get('job') ?? ''
  t.match(job, /\| RELEASE \| funded, active, defaulted \| `job_not_open` \|/)
})
