// Reusable wire schemas. TypeBox schemas are plain JSON Schema 2020-12, so the same objects validate requests,
// type the handlers (Type.Static) and appear unchanged in the OpenAPI 3.1 document.
import Type, { type TObject, type TProperties, type TObjectOptions, type TSchema } from 'typebox'
import { InvalidAddressError, type Address as ViemAddress } from 'viem'
import { keccak256Bytes } from '../chain/keccak.ts'
import { ID_PATTERNS, FORMAT_PATTERNS } from '../engine/ids.ts'

/** 2^256 - 1: the largest amount an EVM token can hold, hence the largest `...Atomic` value accepted. */
export const MAX_UINT256 = (1n << 256n) - 1n

/** A closed object: unknown fields are refused, not ignored (DESIGN section 8). */
export function Strict<Properties extends TProperties>(schema: TObject<Properties>): TObject<Properties> {
  const { type: _type, properties, required: _required, ...options } = schema as TObject<Properties> & Record<string, unknown>
  return Type.Object(properties, { ...(options as TObjectOptions), additionalProperties: false })
}

/** Shorthand for `Strict(Type.Object(properties, options))`. */
export function StrictObject<Properties extends TProperties>(properties: Properties, options: TObjectOptions = {}): TObject<Properties> {
  return Type.Object(properties, { ...options, additionalProperties: false })
}

/** Keywords whose values are instances, not schemas: never inspected for open objects. */
const VALUE_KEYWORDS = new Set(['examples', 'default', 'const', 'enum'])

/**
 * Every object schema reachable from `schema` must close itself (`additionalProperties: false`, or a schema for
 * extra keys as a record does). Returns the JSON pointers of the open ones; the route table refuses to start with any.
 */
export function openObjectPaths(schema: unknown, pointer = '#'): string[] {
  if (typeof schema !== 'object' || schema === null) return []
  const node = schema as Record<string, unknown>
  const found: string[] = []
  const isObjectSchema = node['type'] === 'object' || (node['properties'] !== undefined && node['type'] === undefined)
  if (isObjectSchema && node['additionalProperties'] === undefined && node['unevaluatedProperties'] === undefined) {
    found.push(pointer)
  }
  for (const [key, value] of Object.entries(node)) {
    if (VALUE_KEYWORDS.has(key)) continue
    if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
      for (const [name, child] of Object.entries(value as Record<string, unknown>)) found.push(...openObjectPaths(child, `${pointer}/${key}/${name}`))
    } else if (Array.isArray(value)) {
      value.forEach((child, index) => found.push(...openObjectPaths(child, `${pointer}/${key}/${index}`)))
    } else if (typeof value === 'object' && value !== null) {
      found.push(...openObjectPaths(value, `${pointer}/${key}`))
    }
  }
  return found
}

/**
 * An amount in the smallest unit of an asset, as a decimal string, bounded by `max`. The pattern bounds the
 * digits (so the document says it too); the refinement bounds the value.
 */
export function atomicAtMost(max: bigint, description: string, maxText: string) {
  const maxDigits = max.toString().length
  return Type.Refine(
    Type.String({ pattern: `^(0|[1-9][0-9]{0,${maxDigits - 1}})$`, description, examples: ['1000000'] }),
    // Run only on what the pattern accepts (no leading zero): fewer digits than `max` is less than it, with no
    // BigInt per amount of every request (issue 11).
    (value: string) => value.length < maxDigits || BigInt(value) <= max,
    () => `must be at most ${maxText}`,
  )
}

/** An amount in the smallest unit of an asset: a decimal string of an integer in [0, 2^256-1]. */
export const Atomic = atomicAtMost(MAX_UINT256, 'Integer amount in the smallest unit of the asset, as a decimal string, at most 2^256-1.', '2^256-1')

/**
 * `Atomic` with a description of its own. A spread (`{ ...Atomic, description }`) keeps the pattern but not the
 * refinement, so 2^256 (78 digits, as 2^256-1) passes it: an input amount is described through this instead.
 */
export function atomicDescribed(description: string) {
  return atomicAtMost(MAX_UINT256, description, '2^256-1')
}

/** Basis points, an integer in 0..10000. */
export const Bps = Type.Integer({ minimum: 0, maximum: 10000, description: 'Basis points (1/100 of a percent), 0..10000.' })

/** A whole number of seconds. */
export const Seconds = Type.Integer({ minimum: 0, description: 'Duration in whole seconds.' })

/** An EVM address in any letter case on input; outputs carry the EIP-55 checksum (see `checksum`). */
export const Address = Type.String({
  pattern: FORMAT_PATTERNS.address,
  description: 'EVM address; any letter case accepted on input, EIP-55 checksummed on output.',
  examples: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8'],
})

/** A 32-byte hex value such as a transaction hash. */
export const Bytes32 = Type.String({ pattern: FORMAT_PATTERNS.bytes32, description: '32 bytes, hex with 0x prefix.' })

/** An ISO-8601 UTC timestamp (`...At`). */
export const IsoTime = Type.String({ format: 'date-time', description: 'ISO-8601 timestamp (UTC).', examples: ['2026-01-01T00:00:00.000Z'] })

/**
 * A time a request sends: RFC 3339 (which `date-time` checks, calendar included) and an instant this service can
 * hold. RFC 3339 admits a leap second (`23:59:60`), which no clock here represents: refused, not a 500.
 */
export const IsoTimeInput = Type.Refine(
  Type.String({ format: 'date-time', description: 'ISO-8601 / RFC 3339 timestamp, e.g. 2026-01-01T00:00:00Z; a leap second (:60) is refused.', examples: ['2026-01-01T00:00:00.000Z'] }),
  (value: string) => Number.isFinite(Date.parse(value)),
  () => 'must be an instant that exists: no leap second (:60)',
)

/** A caller-chosen job identifier (src/README.md). */
export const JobId = Type.String({
  pattern: ID_PATTERNS.job,
  description: 'Job identifier chosen by the job\'s client, one namespace for every client: make it unpredictable (e.g. job_ and a random UUID), since whoever learns an id before it is funded can fund it first.',
})

/** One failed rule of a request: a JSON pointer into the request part and a message. */
export const ValidationIssue = StrictObject({
  path: Type.String({ description: 'JSON pointer of the offending value, prefixed by the request part: /body/..., /params/..., /query/...' }),
  message: Type.String(),
})

/** RFC 9457 problem details, the body of every error response (`application/problem+json`). */
export const Problem = StrictObject(
  {
    type: Type.String({ description: 'URI identifying the problem type: urn:agent-credit:problem:<code>.' }),
    title: Type.String({ description: 'Short human summary of the problem type.' }),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String({ description: 'Human explanation of this occurrence.' }),
    code: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'Stable snake_case error code for programs.' }),
    errors: Type.Optional(Type.Array(ValidationIssue, { description: 'Validation failures, when code is validation_failed.' })),
  },
  { description: 'Problem details (RFC 9457).' },
)

// EIP-55 forms by lower-case address: a request checksums its agent and supplier address, mostly addresses seen
// before. viem's getAddress cost 1 to 2 us a call on its own caches' hits and 23 us on a miss (keccak in JavaScript);
// here a hit is a Map lookup and a miss one native keccak (keccak.ts). Bounded by two generations: when the recent one
// is full it becomes the older one and the one before is dropped (no per-hit bookkeeping, no per-miss eviction).
const checksumGeneration = 4096
let checksummedRecent = new Map<string, ViemAddress>()
let checksummedOlder = new Map<string, ViemAddress>()
const lowerCaseAddress = /^0x[0-9a-f]{40}$/

/** Checksums an address already validated by `Address` (any case in, EIP-55 out); viem's InvalidAddressError if not one. */
export function checksum(address: string): ViemAddress {
  const lower = address.toLowerCase()
  const known = checksummedRecent.get(lower) ?? checksummedOlder.get(lower)
  if (known !== undefined) return known
  if (!lowerCaseAddress.test(lower)) throw new InvalidAddressError({ address })
  const result = eip55(lower)
  if (checksummedRecent.size >= checksumGeneration) {
    checksummedOlder = checksummedRecent
    checksummedRecent = new Map()
  }
  checksummedRecent.set(lower, result)
  return result
}

const asciiLowerA = 0x61
const asciiCaseBit = 0x20

/** EIP-55: a hex letter is upper case where the matching nibble of keccak256(the lower-case hex digits) is 8 or more. */
function eip55(lower: string): ViemAddress {
  const digits = Buffer.from(lower.slice(2), 'latin1')
  const hash = keccak256Bytes(digits)
  for (let i = 0; i < 40; i++) {
    const byte = hash[i >> 1] as number
    const nibble = i % 2 === 0 ? byte >> 4 : byte & 0x0f
    if (nibble >= 8 && (digits[i] as number) >= asciiLowerA) digits[i] = (digits[i] as number) ^ asciiCaseBit
  }
  return `0x${digits.toString('latin1')}`
}

/** Parses a validated `Atomic` string. */
export function atomicToBigInt(value: string): bigint {
  return BigInt(value)
}

/** Formats an amount for the wire; asserts the range so that no out-of-range value leaves the service. */
export function bigIntToAtomic(value: bigint): string {
  if (value < 0n || value > MAX_UINT256) throw new RangeError(`atomic amount out of range: ${value}`)
  return value.toString(10)
}

/** Epoch milliseconds to the wire form of `...At` fields. */
export function isoFromMs(ms: number): string {
  return new Date(ms).toISOString()
}

/** Wire `...At` to epoch milliseconds. */
export function msFromIso(iso: string): number {
  const ms = Date.parse(iso)
  if (!Number.isFinite(ms)) throw new RangeError(`not an ISO time: ${iso}`)
  return ms
}

export type { TSchema }

export const NetworkSlug = Type.String({ pattern: FORMAT_PATTERNS.network, description: 'Network slug from /.well-known/service.json.' })
export const AssetSymbol = Type.String({ pattern: '^[A-Za-z0-9.]{1,16}$', description: 'Token symbol configured on the network.' })
