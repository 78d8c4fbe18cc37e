// The caller's public key, to which the score is encrypted: a JWK for ECDH-ES, on P-256, P-384, P-521 or X25519.
// The schema closes the object (a private `d` is refused as an unknown field); `recipientKeyProblem` then checks what
// a schema cannot: the curve fits the key type, the coordinates have the curve's length, the point is on the curve,
// and a trial encryption to it succeeds. WebCrypto and node:crypto import an off-curve P-256 point without complaint
// (encrypting to it yields an answer nobody can decrypt), and refuse a small-order X25519 point only when deriving:
// both are found here, before any payment, instead of after the caller paid.
import { CompactEncrypt, importJWK } from 'jose'
import Type, { type Static } from 'typebox'
import { StrictObject } from '../api/common.ts'
import { JWE_ALG, JWE_ENC } from './seal.ts'

const Base64Url = (description: string) => Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$', description })

export const RecipientKey = StrictObject(
  {
    kty: Type.Union([Type.Literal('EC'), Type.Literal('OKP')], { description: 'EC for P-256/P-384/P-521, OKP for X25519.' }),
    crv: Type.Union([Type.Literal('P-256'), Type.Literal('P-384'), Type.Literal('P-521'), Type.Literal('X25519')]),
    x: Base64Url('x coordinate (base64url, no padding).'),
    y: Type.Optional(Base64Url('y coordinate (base64url, no padding); EC keys only.')),
    kid: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Key id; echoed in the JWE protected header.' })),
    alg: Type.Optional(Type.Literal('ECDH-ES')),
    use: Type.Optional(Type.Literal('enc')),
    key_ops: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 })),
  },
  {
    description:
      'The caller\'s PUBLIC key as a JWK (RFC 7517) for ECDH-ES: {"kty":"EC","crv":"P-256","x","y"} (also P-384, P-521) or {"kty":"OKP","crv":"X25519","x"}. ' +
      'Never send the private part: a "d" member is refused.',
  },
)
export type RecipientKey = Static<typeof RecipientKey>

/** Coordinate length in bytes and the curve y^2 = x^3 - 3x + b over GF(p), per curve (SEC 2 / FIPS 186-4). */
const WEIERSTRASS = {
  'P-256': {
    bytes: 32,
    p: 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  },
  'P-384': {
    bytes: 48,
    p: 2n ** 384n - 2n ** 128n - 2n ** 96n + 2n ** 32n - 1n,
    b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn,
  },
  'P-521': {
    bytes: 66,
    p: 2n ** 521n - 1n,
    b: 0x0051953eb9618e1c9a1f929a21a0b68540eea2da725b99b315f3b8b489918ef109e156193951ec7e937b1652c0bd3bb1bf073573df883d2c34f1ef451fd46b503f00n,
  },
} as const
const X25519_BYTES = 32

function decode(value: string): Buffer {
  return Buffer.from(value, 'base64url')
}

function toBigInt(bytes: Buffer): bigint {
  return bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`)
}

/** What is wrong with a key that passed the schema, or undefined when it can be encrypted to. */
export async function recipientKeyProblem(key: RecipientKey): Promise<string | undefined> {
  const shape = shapeProblem(key)
  if (shape !== undefined) return shape
  try {
    const publicKey = await importJWK({ ...key }, JWE_ALG)
    await new CompactEncrypt(new Uint8Array(1)).setProtectedHeader({ alg: JWE_ALG, enc: JWE_ENC }).encrypt(publicKey)
  } catch (error) {
    return `no key agreement is possible with this key (${(error as Error).name})`
  }
  return undefined
}

function shapeProblem(key: RecipientKey): string | undefined {
  if (key.crv === 'X25519') {
    if (key.kty !== 'OKP') return 'crv X25519 needs kty OKP'
    if (key.y !== undefined) return 'an X25519 key has no y'
    const x = decode(key.x)
    if (x.length !== X25519_BYTES || x.toString('base64url') !== key.x) return `x must be ${X25519_BYTES} bytes, base64url without padding`
    return undefined
  }
  if (key.kty !== 'EC') return `crv ${key.crv} needs kty EC`
  if (key.y === undefined) return `a ${key.crv} key needs y`
  const curve = WEIERSTRASS[key.crv]
  const xBytes = decode(key.x)
  const yBytes = decode(key.y)
  for (const [name, bytes, text] of [['x', xBytes, key.x], ['y', yBytes, key.y]] as const) {
    if (bytes.length !== curve.bytes || bytes.toString('base64url') !== text) return `${name} must be ${curve.bytes} bytes, base64url without padding`
  }
  const { p, b } = curve
  const x = toBigInt(xBytes)
  const y = toBigInt(yBytes)
  if (x >= p || y >= p) return 'a coordinate is not below the field prime'
  const mod = (v: bigint) => ((v % p) + p) % p
  if (mod(y * y) !== mod(x * x * x - 3n * x + b)) return `the point (x, y) is not on ${key.crv}`
  return undefined
}
