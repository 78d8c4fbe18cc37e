// The lease authorization signer: the hand-rolled EIP-712 digest equals viem's hashTypedData for random terms, the
// native signature recovers to the signer with viem, is 65 bytes with a low s, and equals the JavaScript fallback's.
// (The contract's own check of these signatures is in facility-v2.test.ts.)
import t from 'tap'
import fc from 'fast-check'
import { bytesToHex, hashTypedData, hexToBigInt, recoverTypedDataAddress, verifyTypedData, zeroHash, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import {
  LeaseAuthorizationError,
  leaseAuthorizationTypes,
  leaseDomain,
  LeaseSigner,
  nativeStatus,
  type LeaseAuthorization,
} from '../../src/chain/lease-authorization.ts'

const secp256k1HalfOrder = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n

const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => bytesToHex(b))
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => bytesToHex(b) as Address)
const uint256 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }),
  fc.constantFrom(0n, 1n, 2n ** 256n - 1n, 2n ** 64n),
  fc.bigInt({ min: 0n, max: 10n ** 12n }),
)
const authorization: fc.Arbitrary<LeaseAuthorization> = fc.record({
  offerKey: bytes32,
  jobKey: fc.oneof(bytes32, fc.constant(zeroHash)),
  payer: address,
  supplier: address,
  asset: address,
  amount: uint256,
  fee: uint256,
  reserveShare: uint256,
  deadline: uint256,
  dueAt: uint256,
})

const typed = (chainId: number, contract: Address, message: LeaseAuthorization) => ({
  domain: leaseDomain(chainId, contract),
  types: leaseAuthorizationTypes,
  primaryType: 'LeaseAuthorization' as const,
  message,
})

t.test('the native secp256k1 and keccak load here', async (t) => {
  const status = nativeStatus()
  t.comment(`secp256k1 ${status.secp256k1}, keccak ${status.keccak} ${status.errors.join('; ')}`)
  // The prebuilt linux-x64 glibc binaries ship inside the packages; on this project's machines they must load.
  t.same(status, { secp256k1: 'native', keccak: 'native', errors: [] })
})

t.test('the hand-rolled digest equals viem hashTypedData for random terms, chains and contracts', async (t) => {
  fc.assert(
    fc.property(authorization, fc.integer({ min: 1, max: 2 ** 40 }), address, (a, chainId, contract) => {
      const signer = new LeaseSigner({ privateKey: generatePrivateKey(), chainId, verifyingContract: contract })
      const fallback = new LeaseSigner({ privateKey: generatePrivateKey(), chainId, verifyingContract: contract, implementation: 'javascript' })
      const expected = hashTypedData(typed(chainId, contract, a))
      return signer.hashImplementation === 'native' && signer.digest(a) === expected && fallback.digest(a) === expected
    }),
    { numRuns: 300 },
  )
})

t.test('signatures recover to the lease signer with viem, are 65 bytes with a low s, and match the fallback', async (t) => {
  const privateKey = generatePrivateKey()
  const signerAddress = privateKeyToAccount(privateKey).address
  const contract = '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Address
  const native = new LeaseSigner({ privateKey, chainId: 31337, verifyingContract: contract })
  const fallback = new LeaseSigner({ privateKey, chainId: 31337, verifyingContract: contract, implementation: 'javascript' })
  t.equal(native.address, signerAddress)
  t.equal(fallback.implementation, 'javascript')
  t.equal(fallback.hashImplementation, 'javascript')
  await fc.assert(
    fc.asyncProperty(authorization, async (a) => {
      const signature = native.sign(a)
      t.equal(signature.length, 2 + 65 * 2)
      const s = hexToBigInt(`0x${signature.slice(66, 130)}` as Hex)
      const v = Number.parseInt(signature.slice(130), 16)
      if (s > secp256k1HalfOrder || (v !== 27 && v !== 28)) return false
      if (fallback.sign(a) !== signature) return false
      const recovered = await recoverTypedDataAddress({ ...typed(31337, contract, a), signature })
      const verified = await verifyTypedData({ ...typed(31337, contract, a), address: signerAddress, signature })
      // The same terms under another chain id recover to someone else: the domain is signed too.
      const elsewhere = await recoverTypedDataAddress({ ...typed(31338, contract, a), signature })
      return recovered === signerAddress && verified && elsewhere !== signerAddress
    }),
    { numRuns: 40 },
  )
  // viem's own signTypedData yields the same deterministic (RFC 6979) signature.
  const sample = fc.sample(authorization, { numRuns: 5, seed: 7 })
  for (const a of sample) {
    t.equal(native.sign(a), await privateKeyToAccount(privateKey).signTypedData(typed(31337, contract, a)), 'same bytes as viem')
  }
})

t.test('malformed terms are refused instead of signing something else', async (t) => {
  const signer = new LeaseSigner({ privateKey: generatePrivateKey(), chainId: 1, verifyingContract: '0x5FbDB2315678afecb367f032d93F642f64180aa3' })
  const [good] = fc.sample(authorization, { numRuns: 1, seed: 1 }) as [LeaseAuthorization]
  const bad: Partial<Record<keyof LeaseAuthorization, unknown>>[] = [
    { offerKey: '0x1234' },
    { offerKey: `0x${'zz'.repeat(32)}` },
    { jobKey: `${zeroHash}00` },
    { payer: '0x12' },
    { supplier: `0x${'g'.repeat(40)}` },
    { asset: 'not an address' },
    { amount: -1n },
    { fee: 2n ** 256n },
    { reserveShare: 1 },
    { deadline: '5' },
  ]
  for (const patch of bad) {
    t.throws(() => signer.sign({ ...good, ...patch } as LeaseAuthorization), LeaseAuthorizationError, JSON.stringify(patch, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)))
  }
})
