// The README's "Configuration" against the code that reads the configuration (src/app/config.ts, src/chain/config.ts):
// every key of the config file and of a networks file is named there, every environment variable the service reads
// has a row and every row names one it reads, and each default the section states is the one the code applies (an
// environment variable set to its stated default, or a config file key to its stated number, changes nothing).
// Beyond the section, a default the README states beside its key (`leaseTtlSeconds` (30 s)) is checked too. And the
// networks file example of "On chain" loads, and every warning and error the service logs by name is in the README. No
// service is started: the configuration is loaded as `npm start` loads it.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ConfigFileSchema, loadServiceConfig, serviceDefaults } from '../../src/app/config.ts'
import { NetworkFileEntrySchema, parseNetworksConfig, TokenConfigSchema } from '../../src/chain/config.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from '../../src/stream/hub.ts'

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## The API at a glance\n'))
const rows = section.split('\n').filter((line) => line.startsWith('| `'))
const configSource = readFileSync(new URL('../../src/app/config.ts', import.meta.url), 'utf8')

const dir = mkdtempSync(join(tmpdir(), 'docs-config-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

type Properties = { properties: Record<string, unknown> }
const keysOf = (schema: unknown) => Object.keys((schema as Properties).properties)

t.test('every key of the config file and of a networks file is named in the section', async (t) => {
  const file = ConfigFileSchema.properties
  const keys = [...keysOf(ConfigFileSchema), ...keysOf(file.stream), ...keysOf(file.reputation), ...keysOf(NetworkFileEntrySchema), ...keysOf(TokenConfigSchema)]
  for (const key of new Set(keys)) t.ok(section.includes(`\`${key}\``), `\`${key}\` is in the README's Configuration`)
})

t.test('every environment variable the configuration reads has a row, and every row names one it reads', async (t) => {
  const read = new Set([...configSource.matchAll(/env(?:\.([A-Z][A-Z0-9_]+)|\['([A-Z][A-Z0-9_]+)'\]|, '([A-Z][A-Z0-9_]+)')/g)].map((m) => m[1] ?? m[2] ?? m[3]))
  const documented = new Set(rows.flatMap((row) => [...(row.split(' | ')[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1])))
  t.ok(read.size >= 20, `the variables read are found in the source (${read.size})`)
  for (const name of read) t.ok(documented.has(name), `${name} has a row`)
  for (const name of documented) t.ok(read.has(name), `the row ${name} names a variable the service reads`)
})

t.test('each environment variable set to the default its row states changes nothing', async (t) => {
  const defaults = loadServiceConfig({})
  let checked = 0
  for (const row of rows) {
    const [names, stated] = row.slice(2).split(' | ')
    const values = [...(stated ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] as string)
    const variables = [...(names ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] as string)
    // Only a default written as values, one per variable (not "(none)", "on (devnet)", nor `http://HOST:PORT`, a formula).
    if (values.length !== variables.length || values.some((value) => /[A-Z]{4}/.test(value))) continue
    const env = Object.fromEntries(variables.map((name, i) => [name, values[i]]))
    t.same(loadServiceConfig(env), defaults, `${variables.join(', ')} = ${values.join(', ')} is the default`)
    checked++
  }
  t.ok(checked >= 10, `rows with a stated default checked (${checked})`)
})

t.test('each number the CONFIG_FILE row states for a key is the default the code applies', async (t) => {
  const cell = rows.find((row) => row.startsWith('| `CONFIG_FILE`')) ?? ''
  const streamAt = cell.indexOf('`stream` (')
  const reputationAt = cell.indexOf('`reputation` (')
  const inspectorAt = cell.indexOf('`inspector` (')
  t.ok(streamAt > 0 && reputationAt > 0 && inspectorAt > reputationAt, 'the stream and reputation keys are found')
  const load = (file: object) => {
    const path = join(dir, 'config.json')
    writeFileSync(path, JSON.stringify(file))
    return loadServiceConfig({ CONFIG_FILE: path })
  }
  const defaults = loadServiceConfig({})
  const topLevel = new Set(keysOf(ConfigFileSchema))
  let checked = 0
  // `key` (1,024 ...: a number right after the key; one followed by a unit (1 MiB, 24 h) is prose, not a value.
  for (const m of cell.matchAll(/`(\w+)` \((\d[\d,]*)(?![\d,]|\s*(?:MiB|KiB|ms|s|h|days?)\b)/g)) {
    const [, key, digits] = m as unknown as [string, string, string]
    const value = Number(digits.replaceAll(',', ''))
    const at = m.index ?? 0
    if (at > streamAt) {
      t.equal(value, DEFAULT_STREAM_LIMITS[key as keyof StreamLimits], `stream.${key} (${digits}) is the hub's default`)
    } else if (at > reputationAt && at < inspectorAt) {
      t.same(load({ reputation: { [key]: value } }).reputation, defaults.reputation, `reputation.${key} (${digits}) is the default`)
    } else if (topLevel.has(key)) {
      t.same(load({ [key]: value }), { ...defaults }, `${key} (${digits}) is the default`)
    } else continue
    checked++
  }
  t.ok(checked >= 20, `keys with a stated default checked (${checked})`)
})

t.test("the networks file of \"On chain\" loads once its placeholders are filled", async (t) => {
  const example = /\*\*Networks file\*\*[^\n]*\n\n```json\n([\s\S]*?)\n```/.exec(readme)?.[1]
  t.ok(example, 'the example is found')
  const filled = (example ?? '{}').replaceAll('"0x..."', '"0x5FbDB2315678afecb367f032d93F642f64180aa3"').replaceAll('https://...', 'https://rpc.example')
  const key = `0x${'11'.repeat(32)}`
  const [network] = parseNetworksConfig(JSON.parse(filled), { OPERATOR_PRIVATE_KEY: key, LEASE_SIGNER_PRIVATE_KEY: key }, 'README')
  t.match(network, { slug: 'base-sepolia', operatorPrivateKey: key, leaseSignerPrivateKey: key })
})

t.test('a default the README states anywhere beside a key, `key` (N) or `key` (N unit), is the code\'s', async (t) => {
  const defaults: Record<string, unknown> = { ...serviceDefaults, ...defaultEngineConfig, ...DEFAULT_STREAM_LIMITS }
  // The event stream's connectionsPerClientMax (128) is not the HTTP connections' (1,024): the section's test tells them apart.
  delete defaults['connectionsPerClientMax']
  const unitMs: Record<string, number> = { ms: 1, s: 1000, min: 60_000, minutes: 60_000, h: 3_600_000, hours: 3_600_000, day: 86_400_000, days: 86_400_000 }
  let checked = 0
  for (const m of readme.matchAll(/`(\w+)` \((\d[\d,]*)(?![\d,]) ?(ms|s|min|minutes|h|hours|days?|KiB|MiB)?\b/g)) {
    const [, key, digits, unit] = m as unknown as [string, string, string, string | undefined]
    const value = defaults[key]
    if (typeof value !== 'number') continue
    const stated = Number(digits.replaceAll(',', ''))
    const line = readme.slice(0, m.index).split('\n').length
    if (unit === undefined) t.equal(stated, value, `README line ${line}: ${key} (${digits})`)
    else if (unit === 'KiB' || unit === 'MiB') t.equal(stated * (unit === 'KiB' ? 1024 : 1024 * 1024), value, `README line ${line}: ${key} (${digits} ${unit})`)
    else t.equal(stated * (unitMs[unit] as number), key.endsWith('Ms') ? value : value * 1000, `README line ${line}: ${key} (${digits} ${unit})`)
    checked++
  }
  t.ok(checked >= 40, `defaults stated beside their key checked (${checked})`)
})

t.test('every warning and error the service logs by name is named in the README', async (t) => {
  const sources = execFileSync('git', ['ls-files', 'src/app', 'src/http', 'src/service', 'src/chain', 'src/store', 'src/api', 'src/stream', 'src/x402', 'src/score', 'src/reputation', 'src/auth'], { cwd: new URL('../..', import.meta.url), encoding: 'utf8' })
    .split('\n').filter((path) => path.endsWith('.ts'))
  const logged = new Set<string>()
  for (const path of sources) {
    const text = readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
    for (const m of text.matchAll(/level: '(?:warn|error)', msg: '([a-z_]+)'/g)) logged.add(m[1] as string)
  }
  t.ok(logged.size >= 15, `log lines found (${logged.size})`)
  for (const msg of logged) t.ok(readme.includes(`\`${msg}\``), `\`${msg}\` is in the README`)
})
