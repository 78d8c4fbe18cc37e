// The service's Node flags (src/app/node-flags.ts): `npm start` passes every one of them, and a start can tell which
// it lacks.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { missingNodeFlags, SERVICE_NODE_FLAGS } from '../../src/app/node-flags.ts'

t.test('npm start passes every flag of SERVICE_NODE_FLAGS', async (t) => {
  const start = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? ''
  const words = start.split(/\s+/)
  for (const flag of SERVICE_NODE_FLAGS) t.ok(words.includes(flag), `${flag} in "${start}"`)
  t.same(missingNodeFlags(words), [], 'none missing')
})

t.test('missingNodeFlags names the flags a process lacks', async (t) => {
  t.same(missingNodeFlags([]), [...SERVICE_NODE_FLAGS])
  t.same(missingNodeFlags(['--import', 'tsx', ...SERVICE_NODE_FLAGS]), [])
})
