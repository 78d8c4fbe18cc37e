// Assertions on what is written and what is read back. A failure here is a bug in the caller or a damaged file,
// never a condition to work around, so every check throws StoreAssertionError with the offending path.

import { StoreAssertionError } from './errors.ts'
import { ACTOR_KINDS, ENGINE_RECORD_KINDS, type ChangeKind } from './types.ts'

export const ID_LENGTH_MAX = 256
export const RECORD_KEY_LENGTH_MAX = 512
export const VALUE_DEPTH_MAX = 64
export const VERSION_MAX = 1_000_000

const ACTOR_KIND_SET: ReadonlySet<string> = new Set(ACTOR_KINDS)
const CHANGE_KIND_SET: ReadonlySet<string> = new Set([...ACTOR_KINDS, ...ENGINE_RECORD_KINDS])
// Printable ASCII without space: every id the engine mints or accepts (job_x, off_1, 0xAbC...) fits, and a stray
// newline or NUL in a key is caught at the write instead of surfacing as an unreadable key later.
const ID_PATTERN = /^[\x21-\x7e]+$/
const COLLECTION_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/

export function fail(message: string): never {
  throw new StoreAssertionError(message)
}

export function isActorKind(kind: string): boolean {
  return ACTOR_KIND_SET.has(kind)
}

export function assertChangeKind(kind: unknown): asserts kind is ChangeKind {
  if (typeof kind !== 'string' || !CHANGE_KIND_SET.has(kind)) fail(`unknown change kind ${JSON.stringify(kind)}`)
}

export function isId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= ID_LENGTH_MAX && ID_PATTERN.test(id)
}

export function assertId(id: unknown, what: string): asserts id is string {
  if (!isId(id)) {
    fail(`${what}: invalid id ${JSON.stringify(id)} (1..${ID_LENGTH_MAX} printable ASCII characters, no space)`)
  }
}

export function isRecordKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= RECORD_KEY_LENGTH_MAX
}

export function assertRecordKey(key: unknown, what: string): asserts key is string {
  if (!isRecordKey(key)) {
    fail(`${what}: invalid key (a string of 1..${RECORD_KEY_LENGTH_MAX} characters)`)
  }
}

export function assertCollectionName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !COLLECTION_PATTERN.test(name)) {
    fail(`invalid collection name ${JSON.stringify(name)} (${COLLECTION_PATTERN.source})`)
  }
}

export function assertVersion(version: unknown, what: string): asserts version is number {
  if (!Number.isSafeInteger(version) || (version as number) < 1 || (version as number) > VERSION_MAX) {
    fail(`${what}: invalid schema version ${String(version)}`)
  }
}

export function assertTimeMs(value: unknown, what: string): asserts value is number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) fail(`${what}: invalid epoch ms ${String(value)}`)
}

/**
 * The persisted form must be JSON-like plus bigint: what msgpack round-trips exactly. Functions, symbols, undefined,
 * NaN, class instances (Map, Date, ...) would come back changed or not at all, so they are refused at the write.
 */
export function assertJsonLike(value: unknown, path: string): void {
  const problem = jsonLikeProblem(value)
  if (problem !== undefined) failAt(path, problem)
}

/** Where a value stops being JSON-like (`at`, relative to the value) and why. */
export interface JsonLikeProblem {
  at: string
  readonly message: string
}

export function failAt(path: string, problem: JsonLikeProblem): never {
  fail(problemMessage(path, problem))
}

/** A refusal's message: the path to the value that is not JSON-like, and why. */
export function problemMessage(path: string, problem: JsonLikeProblem): string {
  return `${path}${problem.at}: ${problem.message}`
}

/**
 * Where `value` stops being JSON-like, or undefined. The path of the offending value is built only on the way back
 * from a failure: building it for every key (as a string per level) cost more than the check itself (issue 11).
 */
export function jsonLikeProblem(value: unknown): JsonLikeProblem | undefined {
  if (typeof value !== 'object') return leafProblem(value)
  return value === null ? undefined : containerProblem(value, 0)
}

/**
 * A container's entries, each leaf checked in the loop (no call per string or number: most of a snapshot's values,
 * issue 11), each container by recursion. A container at VALUE_DEPTH_MAX holds nothing: its first entry is too deep.
 */
function containerProblem(value: object, depth: number): JsonLikeProblem | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const problem = depth >= VALUE_DEPTH_MAX ? tooDeep() : entryProblem(item, depth)
      if (problem !== undefined) {
        problem.at = `[${i}]${problem.at}`
        return problem
      }
    }
    return undefined
  }
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return { at: '', message: 'not a plain object' }
  // for-in without an own-key test (a quarter of this walk's time, issue 11): with such a prototype it visits the
  // own enumerable keys msgpack writes, and inherited ones only if Object.prototype was given enumerable
  // properties; checking those too refuses more, never less.
  for (const key in value) {
    const item: unknown = (value as Record<string, unknown>)[key]
    const problem = depth >= VALUE_DEPTH_MAX ? tooDeep() : entryProblem(item, depth)
    if (problem !== undefined) {
      problem.at = `.${key}${problem.at}`
      return problem
    }
  }
  return undefined
}

/** An entry of a container at `depth`: strings, booleans, bigints and finite numbers pass without a call. */
function entryProblem(item: unknown, depth: number): JsonLikeProblem | undefined {
  // typeof tests, not a switch on typeof's string (structures-encoder.ts #pack: the optimizing compiler makes each a type check)
  if (typeof item === 'string') return undefined
  if (typeof item === 'number') return item - item === 0 ? undefined : { at: '', message: 'non-finite number' }
  if (typeof item === 'object') return item === null ? undefined : containerProblem(item, depth + 1)
  if (typeof item === 'boolean' || typeof item === 'bigint') return undefined
  return leafProblem(item)
}

function leafProblem(value: unknown): JsonLikeProblem | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'bigint':
      return undefined
    case 'number':
      return Number.isFinite(value) ? undefined : { at: '', message: 'non-finite number' }
    default:
      return { at: '', message: `${typeof value} cannot be persisted` }
  }
}

function tooDeep(): JsonLikeProblem {
  return { at: '', message: `nested deeper than ${VALUE_DEPTH_MAX}` }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
