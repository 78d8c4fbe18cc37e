// On-chain keys of the service's ids. A job's key is public (its client funds it before the service knows it), one per
// network (jobKey: a funding on one network says nothing of the id's key on another); an
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

/** What a job's per-network key is derived from: its network's chain id and credit contract. */
export type JobKeyDomain = { readonly chainId: number; readonly creditContract: string }

/**
 * The key of a job on its network: keccak256(abi.encodePacked(uint256 chainId, address creditContract, bytes(jobId))),
 * the rule the SDK, GET /credit/jobs/{jobId}/funding-transactions and the catalog's contracts.keys give its client.
 * One network's key says nothing of another's: a watcher who reads a key in one network's fundJob calldata cannot
 * compute the id's key on another network (nor its legacy key), so it cannot fund the id there first (outsider29 F2:
 * with one key on every network, a funding of that key elsewhere, earlier, took the id: 409 job_id_funded_elsewhere).
 * Chain ids are unique among configured networks (config.ts); the contract is in too, so a redeployed contract on
 * the same chain has keys of its own. The prefix has a fixed length (52 bytes), so the packed encoding is unambiguous.
 * A registered job keeps the key it was funded under (JobContext.jobKey): read that, never derive it again.
 */
export function jobKey(network: JobKeyDomain, jobId: string): Hex {
  return keccak256HexOfPrefixed(jobKeyPrefix(network), jobId)
}

/**
 * The legacy key of a job: keccak256(utf8(jobId)), the same on every network, under which every job registered before
 * per-network keys was funded (they keep it, src/engine/migrations.ts). A registration still takes a funding under it
 * (a client funded before the upgrade): such a job stays open to the squat by key alone (its key, in its fundJob's
 * calldata, is its key on every network).
 */
export function legacyJobKey(jobId: string): Hex {
  return keccak256HexOfPrefixed(noPrefix, jobId)
}

const noPrefix = new Uint8Array(0)

// The last network's prefix: a service signs and reads keys of few networks, and jobKey runs once per registration.
let lastPrefix: { chainId: number; creditContract: string; bytes: Buffer } | undefined

function jobKeyPrefix(network: JobKeyDomain): Buffer {
  if (lastPrefix?.chainId === network.chainId && lastPrefix.creditContract === network.creditContract) return lastPrefix.bytes
  if (!Number.isSafeInteger(network.chainId) || network.chainId < 1) throw new RangeError(`chainId ${network.chainId} is not a positive integer`)
  if (!/^0x[0-9a-fA-F]{40}$/.test(network.creditContract)) throw new RangeError(`creditContract ${network.creditContract} is not an address`)
  const bytes = Buffer.alloc(52)
  bytes.writeBigUInt64BE(BigInt(network.chainId), 24)
  Buffer.from(network.creditContract.slice(2), 'hex').copy(bytes, 32)
  lastPrefix = { chainId: network.chainId, creditContract: network.creditContract, bytes }
  return bytes
}

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
