// The committed diagrams must be what `npm run diagrams` renders from the machines today.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { setup } from 'xstate'
import { diagramsDir, readmePath, readmeWithSection, renderAll, renderDiagram, renderReadmeSection, systemMapLines } from '../../src/tools/diagrams.ts'

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
  t.match(offer, /\| LEASE_ENDED \| leased \[isCurrentLease and isStale or isCurrentLease\], closing \[isCurrentLease\] \| `offer_not_leased`; `lease_not_current` where the guards say no \|/)
  const job = renderAll().get('job') ?? ''
  t.match(job, /\| RELEASE \| funded, active, defaulted \| `job_not_open` \|/)
})

t.test('the README shows the four diagrams and the system map as generated (run `npm run diagrams`)', async (t) => {
  const readme = readFileSync(readmePath, 'utf8')
  t.equal(readmeWithSection(readme), readme, 'the section between the markers is current')
  const section = renderReadmeSection()
  t.equal(section.match(/```mermaid\n/g)?.length, 5, 'four machines and the map, as Mermaid blocks')
  t.match(section, /Refused \(409, nothing changes\) when the lease is in a state that does not take the command's event: PAY `lease_not_live`, `lease_expired` in expired;/)
  t.match(section, /Refused when the state takes it but its guard says no: TIME_OUT `lease_not_due`\./)
})

t.test('the system map draws each declared path: cause to effect, and the records it writes', async (t) => {
  const lines = systemMapLines([{ command: 'pay', when: 'x', steps: [{ kind: 'offer', event: 'FUND' }, { kind: 'lease', event: 'PAY' }, { kind: 'offer', event: 'NOTE' }, { kind: 'advance', event: 'created' }], records: ['lender'] }])
  t.ok(lines.includes('  offer -->|"FUND => PAY"| lease'), 'an event sent to another actor')
  t.ok(lines.includes('  offer -->|"FUND => created"| advance'), 'an actor created')
  t.notOk(lines.some((l) => l.includes('NOTE')), 'a later step of the same actor is no arrow')
  t.ok(lines.includes('  offer -.->|"pay"| lender'), 'a record written')
})
