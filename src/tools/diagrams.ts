// Generates machines/diagrams/<name>.md: a Mermaid stateDiagram-v2 per machine, derived by walking the machine's
// state nodes and transitions (never hand-written), and a table of when each event is taken or refused, from the
// same transitions and the machine's refusal table. `npm run diagrams` writes them; test/engine/diagrams.test.ts
// fails when a committed diagram differs from what this renders.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AnyStateMachine, AnyStateNode } from 'xstate'
import { machines, refusals, type Refusal } from '../../machines/index.ts'
import { ENGINE_PATHS, type EnginePath } from '../engine/steps.ts'
import { isMainModule } from './main-module.ts'

export const diagramsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'machines', 'diagrams')

function nameOf(node: AnyStateNode): string {
  return node.path.join('.') || node.machine.id
}

function actionNames(actions: readonly unknown[]): string[] {
  return actions.map((a) => (typeof a === 'string' ? a : ((a as { type?: string }).type ?? 'action')))
}

function guardName(guard: unknown): string | null {
  if (!guard) return null
  if (typeof guard === 'string') return guard
  // xstate's and()/or()/not() carry the guards they combine
  const combined = guard as { guards?: unknown[]; check?: { name?: string } }
  if (Array.isArray(combined.guards)) {
    const parts = combined.guards.map((g) => guardName(g) ?? 'guard')
    const name = combined.check?.name ?? ''
    if (name === 'checkNot') return `not ${parts.join(', ')}`
    return parts.join(name === 'checkOr' ? ' or ' : ' and ')
  }
  return (guard as { type?: string }).type ?? 'guard'
}

/** Where a flat machine takes `eventType`: each state, with its guards when every transition there is guarded. */
function takenIn(machine: AnyStateMachine, eventType: string): string[] {
  const places: string[] = []
  for (const node of Object.values(machine.states) as AnyStateNode[]) {
    const transitions = node.transitions.get(eventType)
    if (!transitions || transitions.length === 0) continue
    const guards = transitions.map((transition) => guardName(transition.guard))
    places.push(guards.every((g) => g !== null) ? `${nameOf(node)} [${guards.join(' or ')}]` : nameOf(node))
  }
  return places
}

function refusalTable(machine: AnyStateMachine, table: Readonly<Record<string, Refusal>>): string[] {
  const rows = ['| event | taken in (state [guard]) | otherwise refused with |', '|---|---|---|']
  for (const [eventType, rule] of Object.entries(table)) {
    const places = takenIn(machine, eventType)
    const refused = [
      `\`${rule.code}\``,
      ...Object.entries(rule.states ?? {}).map(([state, code]) => `\`${code}\` in ${state}`),
      ...(rule.guarded === undefined ? [] : [`\`${rule.guarded}\` where the guards say no`]),
    ].join('; ')
    rows.push(`| ${eventType} | ${places.length > 0 ? places.join(', ') : '(never)'} | ${refused} |`)
  }
  return rows
}

function walk(node: AnyStateNode, lines: string[], indent: string): void {
  const children = Object.values(node.states) as AnyStateNode[]
  if (children.length === 0) return
  const initial = node.initial?.target?.[0]
  if (initial) lines.push(`${indent}[*] --> ${nameOf(initial)}`)
  for (const child of children) {
    if (Object.keys(child.states).length > 0) {
      lines.push(`${indent}state ${nameOf(child)} {`)
      walk(child, lines, `${indent}  `)
      lines.push(`${indent}}`)
    }
    for (const [eventType, transitions] of child.transitions) {
      for (const transition of transitions) {
        const targets = (transition.target ?? [child]) as AnyStateNode[]
        const guard = guardName(transition.guard)
        const actions = actionNames(transition.actions as readonly unknown[])
        const label = `${eventType}${guard ? ` [${guard}]` : ''}${actions.length > 0 ? ` / ${actions.join(', ')}` : ''}`
        for (const target of targets) lines.push(`${indent}${nameOf(child)} --> ${nameOf(target)}: ${label}`)
      }
    }
    if (child.type === 'final') lines.push(`${indent}${nameOf(child)} --> [*]`)
  }
}

/** The Mermaid stateDiagram-v2 of a machine, one line each (the inspector page draws it with live counts). */
export function stateDiagramLines(machine: AnyStateMachine): string[] {
  const lines = ['stateDiagram-v2']
  walk(machine.root, lines, '  ')
  return lines
}

/**
 * The Markdown page of one machine: a title, its Mermaid state diagram and, given its refusal table, when each event
 * is taken and what the machine answers otherwise (the engine turns that answer into a conflict with this code).
 */
export function renderDiagram(name: string, machine: AnyStateMachine, table?: Readonly<Record<string, Refusal>>): string {
  const lines = stateDiagramLines(machine)
  const refusals = table === undefined ? [] : ['', '## When each event is taken', '', ...refusalTable(machine, table)]
  return [
    `# ${name} machine`,
    '',
    `Generated by \`npm run diagrams\` from \`machines/${name}.ts\`; do not edit by hand.`,
    'Labels read `EVENT [guard] / actions`.',
    '',
    '```mermaid',
    ...lines,
    '```',
    ...refusals,
    '',
  ].join('\n')
}

const RECORD_LABELS: Readonly<Record<string, string>> = { lender: 'lender', borrower: 'borrower', source: 'backing source', reserve: 'insurance reserve' }

/**
 * The system map as a Mermaid flowchart: the four machines (their states, derived from the machines), the records
 * the engine's commands write, and the cross-actor steps of the declared engine paths (src/engine/steps.ts): an
 * arrow from the actor whose event starts a path to each other actor it moves or creates, labelled `EVENT => EVENT`,
 * and a dotted arrow to each record the path writes, labelled with the command.
 */
export function systemMapLines(paths: readonly EnginePath[] = ENGINE_PATHS): string[] {
  const lines = ['flowchart LR']
  for (const [name, machine] of Object.entries(machines)) {
    const states = Object.keys((machine as AnyStateMachine).states).join(' · ')
    lines.push(`  ${name}(["${name}: ${states}"])`)
  }
  for (const [kind, label] of Object.entries(RECORD_LABELS)) lines.push(`  ${kind}[("${label}")]`)
  const seen = new Set<string>()
  const push = (line: string) => {
    if (!seen.has(line)) lines.push(line)
    seen.add(line)
  }
  for (const path of paths) {
    const [cause, ...effects] = path.steps
    if (cause === undefined) continue
    for (const effect of effects) {
      if (effect.kind === cause.kind && effect.event !== 'created') continue
      push(`  ${cause.kind} -->|"${cause.event} => ${effect.event}"| ${effect.kind}`)
    }
    for (const record of path.records) push(`  ${cause.kind} -.->|"${path.command}"| ${record}`)
  }
  return lines
}

/** The Markdown page of the system map: the flowchart and, per engine path, its steps in order. */
export function renderSystemMap(paths: readonly EnginePath[] = ENGINE_PATHS): string {
  const rows = ['| command | when | steps, in order | records written |', '|---|---|---|---|']
  for (const path of paths) {
    const steps = path.steps.map((s) => `${s.kind} ${s.event}`).join(' → ')
    rows.push(`| ${path.command} | ${path.when} | ${steps} | ${path.records.map((r) => RECORD_LABELS[r] ?? r).join(', ') || '-'} |`)
  }
  return [
    '# System map',
    '',
    'Generated by `npm run diagrams`; do not edit by hand. The machines and their states are derived from',
    '`machines/*.ts`. The cross-actor steps are **declared** in `src/engine/steps.ts`, beside the engine whose code',
    'paths take them (they cannot be read off the machines); `test/engine/steps.test.ts` runs every path with the',
    'engine instrumented and fails when the engine and the declaration differ. An arrow goes from the actor whose',
    'event starts a path to each actor it moves or creates (`EVENT => EVENT`); a dotted arrow to each record it writes.',
    '',
    '```mermaid',
    ...systemMapLines(paths),
    '```',
    '',
    '## Engine paths',
    '',
    ...rows,
    '',
  ].join('\n')
}

export const README_START = '<!-- diagrams:start (generated by npm run diagrams from machines/ and src/engine/steps.ts; do not edit) -->'
export const README_END = '<!-- diagrams:end -->'
export const readmePath = join(diagramsDir, '..', '..', 'README.md')

/** Two lines on when a machine refuses a command, from its refusal table: the codes per event, then the guarded ones. */
function refusalLines(name: string, table: Readonly<Record<string, Refusal>>): string[] {
  const plain = Object.entries(table).map(([event, rule]) => {
    const own = Object.entries(rule.states ?? {}).map(([state, code]) => `, \`${code}\` in ${state}`).join('')
    return `${event} \`${rule.code}\`${own}`
  })
  const guarded = Object.entries(table).filter(([, rule]) => rule.guarded !== undefined).map(([event, rule]) => `${event} \`${rule.guarded}\``)
  return [
    `Refused (409, nothing changes) when the ${name} is in a state that does not take the command's event: ${plain.join('; ')}.`,
    guarded.length > 0 ? `Refused when the state takes it but its guard says no: ${guarded.join('; ')}.` : 'No event of it is guarded: a state that takes an event always takes it.',
  ]
}

/** The README's section between the markers: each machine's diagram and the system map, with when commands are refused. */
export function renderReadmeSection(): string {
  const out = [README_START, '']
  for (const [name, machine] of Object.entries(machines)) {
    out.push(`**${name}** ([table of events](machines/diagrams/${name}.md))`, '', '```mermaid', ...stateDiagramLines(machine as AnyStateMachine), '```', '')
    out.push(...refusalLines(name, refusals[name as keyof typeof refusals]).map((line) => `${line}  `), '')
  }
  out.push('**System map** ([engine paths](machines/diagrams/system.md))', '', '```mermaid', ...systemMapLines(), '```', '')
  out.push(
    'A command is refused when the first step of its path is: that actor\'s machine refuses it with the codes above, and nothing changes.  ',
    'The later steps are never refused: the engine knows their machines take them and treats a refusal there as a broken invariant.  ',
    '',
    README_END,
  )
  return out.join('\n')
}

/** The README with its generated section replaced (the markers must be present once each). */
export function readmeWithSection(readme: string): string {
  const start = readme.indexOf(README_START)
  const end = readme.indexOf(README_END)
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${README_START} ... ${README_END}`)
  return readme.slice(0, start) + renderReadmeSection() + readme.slice(end + README_END.length)
}

export function renderAll(): Map<string, string> {
  const pages = new Map<string, string>()
  for (const [name, machine] of Object.entries(machines)) {
    pages.set(name, renderDiagram(name, machine as AnyStateMachine, refusals[name as keyof typeof refusals]))
  }
  pages.set('system', renderSystemMap())
  return pages
}

if (isMainModule(import.meta.url)) {
  mkdirSync(diagramsDir, { recursive: true })
  for (const [name, page] of renderAll()) {
    writeFileSync(join(diagramsDir, `${name}.md`), page)
    process.stdout.write(`wrote machines/diagrams/${name}.md\n`)
  }
  writeFileSync(readmePath, readmeWithSection(readFileSync(readmePath, 'utf8')))
  process.stdout.write('wrote the diagrams section of README.md\n')
}
