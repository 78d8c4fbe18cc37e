// On-chain keys of the service's ids. A job's key is public (its client funds it before the service knows it); an
// offer's key (the advance's key on chain: one advance per offer) is salted with a secret of the data directory, so
// that nobody can compute the key of a future offer and pay it first (issue 10, hole 1), and so that a fresh data
// directory on a chain shared with an earlier one never reuses a key already paid there.
import { randomBytes } from 'node:crypto'
import { bytesToHex, isHex, keccak256, stringToBytes, type Hex } from 'viem'
import { keccak256HexOfPrefixed } from './keccak.ts'

/** The bytes32 key of a service id on chain: keccak256 of its UTF-8 bytes (v1 contract: jobs, offers, advances). */
export function idKey(id: string): Hex {
  return keccak256(stringToBytes(id))
}

/**
 * The v2 key of a job: keccak256(utf8(jobId)), the rule the job's client uses when it funds (keccak.ts's default
 * hasher: the id's bytes written into its memory as they are): the engine keys every live job by it for the chain's
 * CollateralPosted, and each delivered lease of a job's offer signs it.
 */
export function jobKey(jobId: string): Hex {
  return keccak256HexOfPrefixed(noPrefix, jobId)
}

const noPrefix = new Uint8Array(0)

export const keySaltBytes = 32

export class KeySaltError extends Error {
  override readonly name = 'KeySaltError'
}

/** A new key salt: 32 random bytes, made once when a data directory is created and kept in it for good. */
export function newKeySalt(): Hex {
  return bytesToHex(randomBytes(keySaltBytes))
}

/** Whether `value` is a key salt: 0x and 64 hex digits. */
export function isKeySalt(value: unknown): value is Hex {
  return typeof value === 'string' && isHex(value, { strict: true }) && value.length === 2 + 2 * keySaltBytes
}

/**
 * The v2 key of an offer and of its advance: keccak256(abi.encodePacked(keySalt, utf8(offerId))). The salt has a
 * fixed length, so the packed encoding is unambiguous.
 */
export function offerKey(keySalt: Hex, offerId: string): Hex {
  // One key per credit request: the salt and the id go into the hasher's memory as they are (keccak.ts).
  return keccak256HexOfPrefixed(saltBytes(keySalt), offerId)
}

// The last salt checked and its bytes: a service has one salt, and offerKey runs once per credit request.
let lastSalt: { hex: string; bytes: Buffer } | undefined

function saltBytes(keySalt: Hex): Buffer {
  if (lastSalt?.hex === keySalt) return lastSalt.bytes
  if (!isKeySalt(keySalt)) throw new KeySaltError('a key salt is 32 bytes of 0x-hex')
  lastSalt = { hex: keySalt, bytes: Buffer.from(keySalt.slice(2), 'hex') }
  return lastSalt.bytes
}
