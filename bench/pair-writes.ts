// What one request + match pair of the load mix writes to the store (issue 11), counted rather than timed: the
// engine's commands of a pair (bench/fixtures/pairs.ts: request, match, the follower's batch timing the lease out, the
// ticker expiring the offer) committed one command per group through the store's own prepareCommit and applyGroup, over databases that count every put and remove by database and kind of key, with
// the bytes of the encoded values. Prints a table per command and the total per pair. Options: --pairs 200 --lenders 500
// --group 1: with --group n, the same command of n pairs shares one group transaction (n requests, then their n
// matches, then their n time-outs), as under load, where a group holds many pairs' requests or matches: it counts what
// the group puts beside the changes its commits hand in (each checked when its commit is prepared), so a record put
// once for several commits of the group shows.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { open, type Database, type Key } from 'lmdb'
import type { Change } from '../src/store/index.ts'
import { applyGroup, prepareCommit } from '../src/store/writes.ts'
import { storeDatabases } from './fixtures/store-databases.ts'
import { SNAPSHOT_VERSIONS } from '../src/engine/migrations.ts'
import * as book from './fixtures/book.ts'
import { loadMixPairs, PAIR_COMMANDS } from './fixtures/pairs.ts'

const { values: args } = parseArgs({ options: { pairs: { type: 'string' }, lenders: { type: 'string' }, group: { type: 'string' } }, strict: true })
const PAIRS = Number(args.pairs ?? 200)
const LENDERS = Number(args.lenders ?? 500)
const GROUP = Number(args.group ?? 1)

interface Tally { puts: number; removes: number; bytes: number }
/** command -> `db kind` -> tally */
const counts = new Map<string, Map<string, Tally>>()
let command = 'setup'

function tally(db: string, key: unknown, bytes: number, remove: boolean): void {
  const kind = Array.isArray(key) ? `${db} ${typeof key[0] === 'number' ? key[1] : key[0]}` : `${db} ${String(key)}`
  let byKind = counts.get(command)
  if (byKind === undefined) counts.set(command, (byKind = new Map()))
  let t = byKind.get(kind)
  if (t === undefined) byKind.set(kind, (t = { puts: 0, removes: 0, bytes: 0 }))
  if (remove) t.removes++
  else t.puts++
  t.bytes += bytes
}

/** The database with its puts and removes counted (value bytes as the database encodes them). */
function counted<K extends Key, V>(name: string, db: Database<V, K>): Database<V, K> {
  const encoder = (db as unknown as { encoder?: { encode: (value: unknown) => Uint8Array } }).encoder
  return new Proxy(db, {
    get(target, property) {
      if (property === 'putSync') {
        return (key: K, value: V, options?: unknown) => {
          if (name === 'live' && target.doesExist(key)) {
            tally(name, [`${String((key as unknown[])[0])} (already live: kept)`], 0, false)
            return target.putSync(key, value, options as never)
          }
          const bytes = encoder === undefined ? undefined : Buffer.from(encoder.encode(value))
          const stored = target.get(key) as { snapshot?: unknown } | undefined
          const inner = (value as { snapshot?: unknown }).snapshot
          if (encoder !== undefined && stored?.snapshot !== undefined && Buffer.from(encoder.encode(inner)).equals(Buffer.from(encoder.encode(stored.snapshot)))) tally(name, [`${String((key as unknown[])[0])} (snapshot unchanged)`], 0, false)
          tally(name, key, bytes?.length ?? 0, false)
          return target.putSync(key, value, options as never)
        }
      }
      if (property === 'removeSync') {
        return (key: K) => {
          tally(name, key, 0, true)
          return target.removeSync(key)
        }
      }
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

const dir = mkdtempSync(join(tmpdir(), 'agent-credit-pair-writes-'))
try {
  const root = open({ path: join(dir, 'data'), noSync: true })
  const dbs = storeDatabases(root, counted)
  const limits = { changesPerCommitMax: 10_000, versions: new Map(Object.entries(SNAPSHOT_VERSIONS)), collectionVersions: new Map<string, number>() }
  const commands = new Map<string, number>()
  /** command -> changes handed in by its commits (each checked when prepared) */
  const changesIn = new Map<string, number>()
  /** One group transaction of the commits `group` (each a command's changes). */
  const commit = (name: string, group: ReadonlyArray<readonly Change[]>): void => {
    const commits = group.filter((changes) => changes.length > 0)
    if (commits.length === 0) return
    command = name
    commands.set(name, (commands.get(name) ?? 0) + commits.length)
    changesIn.set(name, (changesIn.get(name) ?? 0) + commits.reduce((n, changes) => n + changes.length, 0))
    const prepared = commits.map((changes) => prepareCommit({ changes }, () => book.T0, 0, limits))
    root.transactionSync(() => {
      const outcome = applyGroup(dbs, prepared, 0, (step) => void root.childTransaction(step))
      const failure = outcome.failures.find((f) => f !== undefined)
      if (failure !== undefined) throw failure as Error
    })
  }

  const { setup, pairs } = loadMixPairs(book, PAIRS, LENDERS)
  for (let i = 0; i < setup.length; i += 5000) commit('setup', [setup.slice(i, i + 5000)])
  for (let first = 0; first < pairs.length; first += GROUP) {
    const chunk = pairs.slice(first, first + GROUP)
    for (const [k, name] of PAIR_COMMANDS.entries()) commit(name, chunk.map((pair) => pair[k] as Change[]))
  }

  const rows: string[] = []
  const total = new Map<string, Tally>()
  for (const [name, byKind] of counts) {
    if (name === 'setup') continue
    const n = commands.get(name) as number
    rows.push(`${name} (${n} commits, ${((changesIn.get(name) as number) / PAIRS).toFixed(2)} changes per pair)`)
    for (const [kind, t] of [...byKind].sort()) {
      rows.push(`  ${kind.padEnd(34)} puts ${(t.puts / PAIRS).toFixed(2).padStart(5)}  removes ${(t.removes / PAIRS).toFixed(2).padStart(5)}  value bytes ${(t.bytes / PAIRS).toFixed(0).padStart(5)} per pair`)
      const all = total.get(kind) ?? { puts: 0, removes: 0, bytes: 0 }
      total.set(kind, { puts: all.puts + t.puts, removes: all.removes + t.removes, bytes: all.bytes + t.bytes })
    }
  }
  let puts = 0
  let removes = 0
  let bytes = 0
  for (const t of total.values()) {
    puts += t.puts
    removes += t.removes
    bytes += t.bytes
  }
  let changes = 0
  for (const [name, n] of changesIn) if (name !== 'setup') changes += n
  rows.push(`per pair: ${(changes / PAIRS).toFixed(2)} changes handed in, ${(puts / PAIRS).toFixed(2)} puts, ${(removes / PAIRS).toFixed(2)} removes, ${(bytes / PAIRS).toFixed(0)} value bytes (${PAIRS} pairs, ${LENDERS} lenders, ${GROUP} pairs' commands per group)`)
  process.stdout.write(`${rows.join('\n')}\n`)
  await root.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
