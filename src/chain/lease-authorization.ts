// Lease authorizations: the service's EIP-712 signature over one lease's terms, which CreditFacilityV2.paySupplier
// checks before a session wallet may pay a supplier (design-chain.md, "Lease authorization"). One is signed per lease,
// on the request path, so signing must be cheap: the digest of this one type is computed by hand (no generic
// typed-data walk) with libkeccak (the `keccak` package's state, keccak.ts) and signed with libsecp256k1 (the
// `secp256k1` package), both native bindings shipped prebuilt inside the packages, with their JavaScript builds as
// the fallback. The hand-rolled digest is tested equal to viem's hashTypedData, and the signature to viem's and the
// contract's recovery.
import { createRequire } from 'node:module'
import { bytesToHex, getAddress, hashDomain, keccak256, stringToBytes, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { keccak256Bytes, keccakHasher, keccakStatus, type Keccak256, type KeccakImplementation } from './keccak.ts'

const require = createRequire(import.meta.url)

export const leaseDomainName = 'CreditFacility'
export const leaseDomainVersion = '2'

/** The EIP-712 type, for viem's signTypedData / verifyTypedData / hashTypedData. */
export const leaseAuthorizationTypes = {
  LeaseAuthorization: [
    { name: 'offerKey', type: 'bytes32' },
    { name: 'jobKey', type: 'bytes32' },
    { name: 'payer', type: 'address' },
    { name: 'supplier', type: 'address' },
    { name: 'asset', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'fee', type: 'uint256' },
    { name: 'reserveShare', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'dueAt', type: 'uint256' },
  ],
} as const

export const leaseAuthorizationTypeString =
  'LeaseAuthorization(bytes32 offerKey,bytes32 jobKey,address payer,address supplier,address asset,' +
  'uint256 amount,uint256 fee,uint256 reserveShare,uint256 deadline,uint256 dueAt)'

const typeHash = keccak256(stringToBytes(leaseAuthorizationTypeString), 'bytes')

/** One lease's terms, as the contract's LeaseAuthorization struct. Times are unix seconds. */
export type LeaseAuthorization = {
  offerKey: Hex
  /** The job's key, or zeroHash for an advance on a backing source. */
  jobKey: Hex
  /** The leased lender's session key: the only address that may pay. */
  payer: Address
  supplier: Address
  asset: Address
  amount: bigint
  fee: bigint
  /** The insurance reserve's part of the fee (<= fee). */
  reserveShare: bigint
  /** The lease's expiry, inclusive. */
  deadline: bigint
  dueAt: bigint
}

export type LeaseDomain = { name: string; version: string; chainId: number; verifyingContract: Address }

export function leaseDomain(chainId: number, verifyingContract: Address): LeaseDomain {
  return { name: leaseDomainName, version: leaseDomainVersion, chainId, verifyingContract: getAddress(verifyingContract) }
}

export class LeaseAuthorizationError extends Error {
  override readonly name = 'LeaseAuthorizationError'
}

const uint256Max = 2n ** 256n - 1n

function writeWord(buffer: Buffer, offset: number, hex: string, field: string, bytes: 32 | 20): void {
  // Checked here because Buffer.write stops silently at the first non-hex digit: a malformed field must not sign.
  if (hex.length !== 2 + 2 * bytes || !/^0x[0-9a-fA-F]*$/.test(hex)) {
    throw new LeaseAuthorizationError(`${field} must be ${bytes} bytes of 0x-hex`)
  }
  buffer.write(hex.slice(2), offset + 32 - bytes, 'hex')
}

function writeUint(buffer: Buffer, offset: number, value: bigint, field: string): void {
  if (typeof value !== 'bigint' || value < 0n || value > uint256Max) throw new LeaseAuthorizationError(`${field} must be a uint256`)
  buffer.write(value.toString(16).padStart(64, '0'), offset, 'hex')
}

/** The subset of the `secp256k1` package's API used here (identical in its native and elliptic builds). */
type Secp256k1 = {
  ecdsaSign(message32: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number }
}

export type NativeImplementation = KeccakImplementation

/** A native module loaded by its binding entry point (never the package's silent fallback), and why it did not load. */
type Loaded<T> = { lib: T; error: undefined } | { lib: undefined; error: string }

function loadNative<T>(path: string): Loaded<T> {
  try {
    return { lib: require(path) as T, error: undefined }
  } catch (error) {
    return { lib: undefined, error: `${path}: ${(error as Error).message.split('\n')[0]}` }
  }
}

let nativeSecp256k1: Loaded<Secp256k1> | undefined
let ellipticSecp256k1: Secp256k1 | undefined

function secp256k1Implementation(wanted?: NativeImplementation): { name: NativeImplementation; lib: Secp256k1 } {
  nativeSecp256k1 ??= loadNative<Secp256k1>('secp256k1/bindings.js')
  if (wanted !== 'javascript' && nativeSecp256k1.lib !== undefined) return { name: 'native', lib: nativeSecp256k1.lib }
  ellipticSecp256k1 ??= require('secp256k1/elliptic.js') as Secp256k1
  return { name: 'javascript', lib: ellipticSecp256k1 }
}

/** Which implementations sign and hash on this machine, and why a native one did not load if it did not. */
export function nativeStatus(): { secp256k1: NativeImplementation; keccak: NativeImplementation; errors: string[] } {
  const keccak = keccakStatus()
  const secp256k1 = secp256k1Implementation().name
  const errors = [nativeSecp256k1?.error, keccak.error].filter((e): e is string => e !== undefined)
  return { secp256k1, keccak: keccak.implementation, errors }
}

/** hashStruct(LeaseAuthorization) of EIP-712: keccak256(typeHash ++ the ten fields, each one 32-byte word). */
export function leaseStructHash(a: LeaseAuthorization, hash: Keccak256 = keccak256Bytes): Uint8Array {
  const buffer = Buffer.alloc(32 * 11)
  buffer.set(typeHash, 0)
  writeWord(buffer, 32, a.offerKey, 'offerKey', 32)
  writeWord(buffer, 64, a.jobKey, 'jobKey', 32)
  writeWord(buffer, 96, a.payer, 'payer', 20)
  writeWord(buffer, 128, a.supplier, 'supplier', 20)
  writeWord(buffer, 160, a.asset, 'asset', 20)
  writeUint(buffer, 192, a.amount, 'amount')
  writeUint(buffer, 224, a.fee, 'fee')
  writeUint(buffer, 256, a.reserveShare, 'reserveShare')
  writeUint(buffer, 288, a.deadline, 'deadline')
  writeUint(buffer, 320, a.dueAt, 'dueAt')
  return hash(buffer)
}

/** The EIP-712 digest of a lease authorization for a domain separator: keccak256(0x1901 ++ separator ++ hashStruct). */
export function leaseDigestBytes(domainSeparator: Uint8Array, a: LeaseAuthorization, hash: Keccak256 = keccak256Bytes): Uint8Array {
  const buffer = Buffer.alloc(66)
  buffer[0] = 0x19
  buffer[1] = 0x01
  buffer.set(domainSeparator, 2)
  buffer.set(leaseStructHash(a, hash), 34)
  return hash(buffer)
}

export type LeaseSignerOptions = {
  privateKey: Hex
  chainId: number
  /** The CreditFacilityV2 the authorizations are for (the EIP-712 verifying contract). */
  verifyingContract: Address
  /** Force the JavaScript implementations (tests and bench of the fallback); default: native where it loads. */
  implementation?: NativeImplementation
}

/** Signs lease authorizations for one contract on one chain with the service's lease key. */
export class LeaseSigner {
  readonly address: Address
  readonly chainId: number
  readonly verifyingContract: Address
  /** Of the signature; `hashImplementation` of the digest. */
  readonly implementation: NativeImplementation
  readonly hashImplementation: NativeImplementation
  readonly domainSeparator: Hex
  readonly #domainSeparator: Uint8Array
  readonly #privateKey: Uint8Array
  readonly #secp: Secp256k1
  readonly #hash: Keccak256

  constructor(options: LeaseSignerOptions) {
    const account = privateKeyToAccount(options.privateKey)
    this.address = account.address
    this.chainId = options.chainId
    this.verifyingContract = getAddress(options.verifyingContract)
    this.domainSeparator = hashDomain({
      domain: { ...leaseDomain(options.chainId, this.verifyingContract), chainId: BigInt(options.chainId) },
      types: { EIP712Domain: eip712DomainFields },
    })
    this.#domainSeparator = Buffer.from(this.domainSeparator.slice(2), 'hex')
    this.#privateKey = Buffer.from(options.privateKey.slice(2), 'hex')
    const secp = secp256k1Implementation(options.implementation)
    this.implementation = secp.name
    this.#secp = secp.lib
    const keccak = keccakHasher(options.implementation)
    this.hashImplementation = keccak.name
    this.#hash = keccak.hash
  }

  digest(a: LeaseAuthorization): Hex {
    return bytesToHex(leaseDigestBytes(this.#domainSeparator, a, this.#hash))
  }

  /** The 65-byte signature r ++ s ++ v (v = 27 + recovery id; s is low, as libsecp256k1 and OpenZeppelin's ECDSA require). */
  sign(a: LeaseAuthorization): Hex {
    return signDigestWith(this.#secp, leaseDigestBytes(this.#domainSeparator, a, this.#hash), this.#privateKey)
  }
}

function signDigestWith(secp: Secp256k1, digest: Uint8Array, privateKey: Uint8Array): Hex {
  const { signature, recid } = secp.ecdsaSign(digest, privateKey)
  const out = Buffer.alloc(65)
  out.set(signature, 0)
  out[64] = 27 + recid
  return `0x${out.toString('hex')}`
}

/**
 * Signs a 32-byte digest synchronously (libsecp256k1 where it loads; RFC 6979, so the same signature as viem's), for
 * signatures made inside a command's synchronous section, where viem's async signers cannot run (the passport).
 */
export function signDigest(digest: Hex, privateKey: Hex): Hex {
  return signDigestWith(secp256k1Implementation().lib, Buffer.from(digest.slice(2), 'hex'), Buffer.from(privateKey.slice(2), 'hex'))
}

const eip712DomainFields = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
] as const
