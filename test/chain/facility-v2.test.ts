// CreditFacilityV2 against anvil: every rule proven by DIRECT calls from fresh wallets, balances read on chain, and
// token conservation (contract balance == escrow + collateral of open and failed jobs + reserve) after each sequence.
import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, hexToBigInt, numberToHex, toFunctionSelector, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { deployCreditFacilityV2 } from '../../src/chain/devnet.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import { LeaseSigner, type LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { ascendingKeys } from '../../src/chain/operator.ts'
import { compileSolidity, JobStatus, rejectsWith, setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'

const secp256k1Order = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

let f: V2Fixture
const salt = newKeySalt()
let sequence = 0
const nextJobKey = () => jobKeyOf(`job_v2_${++sequence}`)
const nextOfferKey = () => offerKeyOf(salt, `off_${++sequence}`)
const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address

t.before(async () => {
  f = await setupFacilityV2(t)
})

type JobSetup = { jobKey: Hex; client: Wallet; borrower: Wallet }

/** A job funded by a fresh client for a fresh borrower, with `collateral` posted. */
async function openJob(escrow: bigint, collateral = 0n, asset: Address = f.token): Promise<JobSetup> {
  const client = await f.wallet(escrow, asset)
  const borrower = await f.wallet(collateral + 1_000n * USDC, asset)
  const jobKey = nextJobKey()
  await f.call(client, 'fundJob', [jobKey, asset, escrow, borrower.account.address])
  if (collateral > 0n) await f.call(borrower, 'postCollateral', [jobKey, asset, collateral])
  f.jobKeys.add(jobKey)
  return { jobKey, client, borrower }
}

/** Terms of a lease: the given ones over sensible defaults (deadline in 10 minutes, due in an hour, chain time). */
async function terms(payer: Wallet, overrides: Partial<LeaseAuthorization> = {}): Promise<LeaseAuthorization> {
  const now = await f.chainNow()
  return {
    offerKey: nextOfferKey(),
    jobKey: zeroHash,
    payer: payer.account.address,
    supplier: freshAddress(),
    asset: f.token,
    amount: 100n * USDC,
    fee: 10n * USDC,
    reserveShare: 1n * USDC,
    deadline: now + 600n,
    dueAt: now + 3_600n,
    ...overrides,
  }
}

async function pay(payer: Wallet, a: LeaseAuthorization, signature = f.authorize(a)): Promise<Hex> {
  return f.call(payer, 'paySupplier', [a, signature])
}

/** A lender wallet and a paid advance on `jobKey` (zeroHash: a backing source). */
async function advance(jobKey: Hex, overrides: Partial<LeaseAuthorization> = {}, asset: Address = f.token) {
  const lender = await f.wallet(10_000n * USDC, asset)
  const a = await terms(lender, { jobKey, asset, ...overrides })
  await pay(lender, a)
  return { lender, a, offerKey: a.offerKey }
}

async function balances(asset: Address, ...holders: Address[]): Promise<bigint[]> {
  return Promise.all(holders.map((h) => f.balance(h, asset)))
}

async function deltas(asset: Address, holders: Address[], before: bigint[]): Promise<bigint[]> {
  return (await balances(asset, ...holders)).map((after, i) => after - (before[i] as bigint))
}

t.test('lease authorization', async (t) => {
  const { jobKey, borrower } = await openJob(1_000n * USDC)
  const lender = await f.wallet(10_000n * USDC)
  const stranger = await f.wallet(10_000n * USDC)
  const a = await terms(lender, { jobKey })
  const signature = f.authorize(a)

  t.equal(
    await f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'leaseAuthorizationDigest', args: [a] }),
    f.signer.digest(a),
    'the contract computes the digest the service signs',
  )

  t.test('a signature by any other key is refused', async (t) => {
    const other = new LeaseSigner({ privateKey: generatePrivateKey(), chainId: f.network.chainId, verifyingContract: f.facility })
    await rejectsWith(t, pay(lender, a, f.authorize(a, other)), 'WrongLeaseSigner', 'signed by another key', [other.address])
    const otherContract = new LeaseSigner({ privateKey: generatePrivateKey(), chainId: f.network.chainId, verifyingContract: freshAddress() })
    await rejectsWith(t, pay(lender, a, f.authorize(a, otherContract)), 'WrongLeaseSigner', 'signed for another contract')
  })

  t.test('a wrong term in any field is refused', async (t) => {
    const tampered: [keyof LeaseAuthorization, unknown][] = [
      ['offerKey', nextOfferKey()],
      ['jobKey', zeroHash],
      ['supplier', freshAddress()],
      ['asset', getAddress(f.network.identityRegistry)],
      ['amount', a.amount + 1n],
      ['fee', a.fee - 1n],
      ['reserveShare', 0n],
      ['deadline', a.deadline + 1n],
      ['dueAt', a.dueAt + 86_400n],
    ]
    for (const [field, value] of tampered) {
      await rejectsWith(t, pay(lender, { ...a, [field]: value }, signature), 'WrongLeaseSigner', `${field} changed`)
    }
    // The payer field too: a stranger naming itself as payer under the lender's authorization.
    await rejectsWith(t, pay(stranger, { ...a, payer: stranger.account.address }, signature), 'WrongLeaseSigner', 'payer changed')
  })

  t.test('only the authorized payer may use it', async (t) => {
    await rejectsWith(t, pay(stranger, a, signature), 'NotPayer', 'a stranger submits the lender\'s authorization', [stranger.account.address, lender.account.address])
  })

  t.test('an expired authorization is refused', async (t) => {
    const now = await f.chainNow()
    const expired = await terms(lender, { jobKey, deadline: now - 1n })
    await rejectsWith(t, pay(lender, expired), 'DeadlinePassed', 'deadline passed')
  })

  t.test('a malformed or malleated signature is refused', async (t) => {
    await rejectsWith(t, pay(lender, a, signature.slice(0, 130) as Hex), 'MalformedLeaseSignature', '64 bytes')
    await rejectsWith(t, pay(lender, a, `${signature}00` as Hex), 'MalformedLeaseSignature', '66 bytes')
    // The same signature with s' = n - s and v flipped recovers to the same key: refused so that none has a twin.
    const s = hexToBigInt(`0x${signature.slice(66, 130)}`)
    const v = Number.parseInt(signature.slice(130), 16)
    const twin = `${signature.slice(0, 66)}${numberToHex(secp256k1Order - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
    await rejectsWith(t, pay(lender, a, twin), 'MalformedLeaseSignature', 'high-s twin')
  })

  t.test('a valid authorization pays the supplier and records the advance', async (t) => {
    const before = await balances(f.token, lender.account.address, a.supplier, f.facility)
    const hash = await pay(lender, a, signature)
    t.strictSame(await deltas(f.token, [lender.account.address, a.supplier, f.facility], before), [-a.amount, a.amount, 0n], 'principal from payer to supplier')
    t.match(await f.advance(a.offerKey), {
      jobKey,
      lender: lender.account.address,
      asset: f.token,
      dueAt: a.dueAt,
      lenderOwed: a.amount + a.fee - a.reserveShare,
      reserveOwed: a.reserveShare,
      liquidated: false,
      exists: true,
    })
    t.match(await f.job(jobKey), { outstanding: 1n, unresolved: 1n, status: JobStatus.Open })
    const [event] = await f.events(hash)
    t.equal(event?.eventName, 'SupplierPaid')
    t.match(event?.args, {
      offerKey: a.offerKey, payer: lender.account.address, supplier: a.supplier, jobKey, asset: f.token,
      amount: a.amount, fee: a.fee, reserveShare: a.reserveShare, dueAt: a.dueAt,
    })
  })

  t.test('an authorization is used once: a second payment of the offer is refused', async (t) => {
    await rejectsWith(t, pay(lender, a, signature), 'OfferAlreadyPaid', 'the same authorization again', [a.offerKey])
    const again = { ...a, amount: 1n, supplier: freshAddress() }
    await rejectsWith(t, pay(lender, again), 'OfferAlreadyPaid', 'another authorization for the same offer')
  })

  t.test('terms the contract refuses even when signed', async (t) => {
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey, amount: 0n })), 'ZeroAmount', 'zero amount')
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey, fee: 1n, reserveShare: 2n })), 'ReserveOverFee', 'reserve share over the fee')
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey, offerKey: zeroHash })), 'ZeroKey', 'zero offer key')
    for (const [supplier, what] of [
      [f.facility, 'the contract'],
      [lender.account.address, 'the payer'],
      [borrower.account.address, 'the job\'s borrower'],
      [zeroAddress, 'nobody'],
    ] as const) {
      await rejectsWith(t, pay(lender, await terms(lender, { jobKey, supplier })), 'InvalidSupplier', `supplier = ${what}`)
    }
    const otherToken = await f.deployToken('OTH')
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey, asset: otherToken })), 'AssetMismatch', 'asset other than the job\'s')
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey: nextJobKey() })), 'UnknownJob', 'unknown job')
    const failed = await openJob(10n * USDC)
    await f.call(f.operator, 'failJob', [failed.jobKey])
    await rejectsWith(t, pay(lender, await terms(lender, { jobKey: failed.jobKey })), 'JobNotOpen', 'failed job')
  })

  t.test('an advance on a backing source (no job) pays and records', async (t) => {
    const b = await terms(lender)
    await pay(lender, b)
    t.match(await f.advance(b.offerKey), { jobKey: zeroHash, lenderOwed: b.amount + b.fee - b.reserveShare, exists: true })
    t.equal(await f.balance(b.supplier), b.amount)
  })

  t.test('token conservation', (t) => f.checkConservation(t))
})

t.test('repay', async (t) => {
  const { jobKey } = await openJob(1_000n * USDC)
  const { lender, offerKey } = await advance(jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC })
  const payer = await f.wallet(1_000n * USDC)
  const who = [payer.account.address, lender.account.address, f.facility] as Address[]
  const repay = (amount: bigint, key = offerKey) => f.call(payer, 'repay', [key, amount])

  t.test('a partial repayment goes to the lender first', async (t) => {
    const before = await balances(f.token, ...who)
    const hash = await repay(50n * USDC)
    t.strictSame(await deltas(f.token, who, before), [-50n * USDC, 50n * USDC, 0n])
    t.match(await f.advance(offerKey), { lenderOwed: 59n * USDC, reserveOwed: 1n * USDC })
    t.match((await f.events(hash))[0]?.args, { offerKey, payer: payer.account.address, lender: lender.account.address, toLender: 50n * USDC, toReserve: 0n, lenderOwed: 59n * USDC, reserveOwed: 1n * USDC })
    t.match(await f.job(jobKey), { outstanding: 1n, unresolved: 1n })
  })

  t.test('the exact lender part leaves the reserve share owed', async (t) => {
    const before = await balances(f.token, ...who)
    await repay(59n * USDC)
    t.strictSame(await deltas(f.token, who, before), [-59n * USDC, 59n * USDC, 0n])
    t.match(await f.advance(offerKey), { lenderOwed: 0n, reserveOwed: 1n * USDC })
    t.match(await f.job(jobKey), { outstanding: 1n, unresolved: 1n }, 'still owing: still outstanding')
  })

  t.test('an overpayment pulls only what is owed, then the reserve gets its share', async (t) => {
    const reserveBefore = await f.reserve()
    const before = await balances(f.token, ...who)
    const hash = await repay(900n * USDC)
    t.strictSame(await deltas(f.token, who, before), [-1n * USDC, 0n, 1n * USDC], 'only the 1 USDC owed left the payer\'s wallet')
    t.equal(await f.reserve(), reserveBefore + 1n * USDC)
    t.match((await f.events(hash))[0]?.args, { toLender: 0n, toReserve: 1n * USDC, lenderOwed: 0n, reserveOwed: 0n })
    t.match(await f.job(jobKey), { outstanding: 0n, unresolved: 0n }, 'repaid: neither outstanding nor unresolved')
    await rejectsWith(t, repay(1n), 'NothingOwed', 'a repaid advance', [offerKey])
  })

  t.test('one overpayment covers both parts, lender first', async (t) => {
    const second = await advance(jobKey, { amount: 200n * USDC, fee: 20n * USDC, reserveShare: 2n * USDC })
    // Allowance far above the balance: a contract that tried to pull the whole amount would fail.
    await f.publicClient.waitForTransactionReceipt({
      hash: await payer.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'approve', args: [f.facility, 10n ** 30n] }),
    })
    const reserveBefore = await f.reserve()
    const w = [payer.account.address, second.lender.account.address] as Address[]
    const before = await balances(f.token, ...w)
    await repay(10n ** 24n, second.offerKey)
    t.strictSame(await deltas(f.token, w, before), [-220n * USDC, 218n * USDC], 'owed 218 + 2: pulled 220 of the 10^24 offered')
    t.equal(await f.reserve(), reserveBefore + 2n * USDC)
  })

  t.test('misuse', async (t) => {
    await rejectsWith(t, repay(0n), 'ZeroAmount', 'zero amount')
    await rejectsWith(t, repay(1n, nextOfferKey()), 'UnknownAdvance', 'unknown advance')
    await rejectsWith(t, repay(1n, zeroHash), 'UnknownAdvance', 'zero key')
  })

  t.test('token conservation', (t) => f.checkConservation(t))
})

t.test('settleJob', async (t) => {
  const { jobKey, borrower } = await openJob(300n * USDC, 50n * USDC)
  const a1 = await advance(jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC })
  const a2 = await advance(jobKey, { amount: 80n * USDC, fee: 8n * USDC, reserveShare: 1n * USDC })
  const a3 = await advance(jobKey, { amount: 20n * USDC, fee: 2n * USDC, reserveShare: 0n })
  const payer = await f.wallet(100n * USDC)
  await f.call(payer, 'repay', [a3.offerKey, 22n * USDC])
  const other = await openJob(100n * USDC)
  const foreign = await advance(other.jobKey, { amount: 10n * USDC, fee: 1n * USDC, reserveShare: 0n })
  const settle = (keys: Hex[], who: Wallet = f.operator, key = jobKey) => f.call(who, 'settleJob', [key, keys])

  t.test('only the operator, only for exactly the advances that owe', async (t) => {
    await rejectsWith(t, settle([a1.offerKey, a2.offerKey], borrower), 'NotOperator', 'the borrower is not the operator')
    await rejectsWith(t, settle([a1.offerKey]), 'AdvanceCountMismatch', 'one missing', [1n, 2n])
    await rejectsWith(t, settle([a1.offerKey, a2.offerKey, foreign.offerKey]), 'AdvanceCountMismatch', 'one too many')
    await rejectsWith(t, settle([a1.offerKey, a1.offerKey]), 'DuplicateAdvance', 'the same advance twice', [a1.offerKey])
    // Ascending keys only: the duplicate check compares neighbours, so its gas is linear in the advances.
    const [low, high] = ascendingKeys([a1.offerKey, a2.offerKey]) as [Hex, Hex]
    await rejectsWith(t, settle([high, low]), 'AdvancesNotAscending', 'the keys in descending order', [low])
    await rejectsWith(t, settle([a1.offerKey, foreign.offerKey]), 'AdvanceOfOtherJob', 'another job\'s advance')
    await rejectsWith(t, settle([a1.offerKey, a3.offerKey]), 'NothingOwed', 'an advance already repaid')
    await rejectsWith(t, settle([a1.offerKey, nextOfferKey()]), 'UnknownAdvance', 'an unknown advance')
    await rejectsWith(t, settle([], f.operator, nextJobKey()), 'UnknownJob', 'an unknown job')
  })

  t.test('pays each lender and the reserve in full, the rest to the borrower', async (t) => {
    const who = [a1.lender.account.address, a2.lender.account.address, borrower.account.address, f.facility] as Address[]
    const before = await balances(f.token, ...who)
    const reserveBefore = await f.reserve()
    const hash = await settle(ascendingKeys([a2.offerKey, a1.offerKey]))
    // held 350 = escrow 300 + collateral 50; owed 110 + 88; lenders 109 + 87, reserve 1 + 1, borrower 152.
    t.strictSame(await deltas(f.token, who, before), [109n * USDC, 87n * USDC, 152n * USDC, -348n * USDC])
    t.equal(await f.reserve(), reserveBefore + 2n * USDC)
    const events = await f.events(hash)
    t.same(events.map((e) => e.eventName), ['AdvanceSettled', 'AdvanceSettled', 'JobSettled'])
    // In the keys' order, which the random offer keys decide: each advance's event found by its key.
    const settled = events.flatMap((e) => (e.eventName === 'AdvanceSettled' ? [e.args] : []))
    t.same(settled.map((a) => a.offerKey), ascendingKeys([a1.offerKey, a2.offerKey]), 'one AdvanceSettled per key, in ascending order')
    t.match(settled.find((a) => a.offerKey === a2.offerKey), { jobKey, lender: a2.lender.account.address, toLender: 87n * USDC, toReserve: 1n * USDC })
    t.match(events[2]?.args, { jobKey, borrower: borrower.account.address, toLenders: 196n * USDC, toReserve: 2n * USDC, toBorrower: 152n * USDC })
    t.match(await f.job(jobKey), { escrow: 0n, collateral: 0n, outstanding: 0n, unresolved: 0n, status: JobStatus.Settled })
    t.match(await f.advance(a1.offerKey), { lenderOwed: 0n, reserveOwed: 0n })
    await rejectsWith(t, settle([]), 'JobNotOpen', 'settled twice')
    await rejectsWith(t, f.call(borrower, 'postCollateral', [jobKey, f.token, 1n]), 'JobNotOpen', 'collateral after settlement')
  })

  t.test('a job that cannot cover its advances is refused, until collateral covers them', async (t) => {
    const j = await openJob(50n * USDC)
    await advance(j.jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC })
    const keys = [(await lastAdvanceOf(j.jobKey))]
    await rejectsWith(t, settle(keys, f.operator, j.jobKey), 'Underfunded', 'owed 110, held 50', [110n * USDC, 50n * USDC])
    await f.call(j.borrower, 'postCollateral', [j.jobKey, f.token, 60n * USDC])
    const before = await f.balance(j.borrower.account.address)
    await settle(keys, f.operator, j.jobKey)
    t.equal(await f.balance(j.borrower.account.address), before, 'nothing left for the borrower')
    t.match(await f.job(j.jobKey), { status: JobStatus.Settled, escrow: 0n, collateral: 0n })
  })

  t.test('a liquidated advance with a shortfall is paid from the escrow at settlement', async (t) => {
    const j = await openJob(500n * USDC, 20n * USDC)
    const now = await f.chainNow()
    const adv = await advance(j.jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC, dueAt: now + 30n })
    await f.advanceTime(60)
    const reserve = await f.reserve()
    await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    // collateral 20 to the lender, then the reserve pays what it holds (up to the 89 left), subrogated.
    const fromReserve = reserve < 89n * USDC ? reserve : 89n * USDC
    const left = await f.advance(adv.offerKey)
    t.equal(left.lenderOwed, 89n * USDC - fromReserve)
    t.equal(left.reserveOwed, 1n * USDC + fromReserve)
    t.match(await f.job(j.jobKey), { outstanding: 1n, unresolved: 0n, collateral: 0n })
    const who = [adv.lender.account.address, j.borrower.account.address] as Address[]
    const before = await balances(f.token, ...who)
    const reserveBefore = await f.reserve()
    await settle([adv.offerKey], f.operator, j.jobKey)
    t.strictSame(await deltas(f.token, who, before), [left.lenderOwed, 500n * USDC - left.lenderOwed - left.reserveOwed])
    t.equal(await f.reserve(), reserveBefore + left.reserveOwed, 'the reserve recovers what it paid, and its share')
  })

  t.test('a job without advances settles everything to the borrower', async (t) => {
    const j = await openJob(40n * USDC, 5n * USDC)
    const before = await f.balance(j.borrower.account.address)
    await settle([], f.operator, j.jobKey)
    t.equal((await f.balance(j.borrower.account.address)) - before, 45n * USDC)
  })

  t.test('token conservation', (t) => f.checkConservation(t))
})

/** The offerKey of the advance paid last (the sequence is shared, so read it back from the last SupplierPaid). */
async function lastAdvanceOf(jobKey: Hex): Promise<Hex> {
  const logs = await f.publicClient.getContractEvents({ address: f.facility, abi: creditFacilityV2Abi, eventName: 'SupplierPaid', fromBlock: 0n, strict: true })
  const mine = logs.filter((log) => log.args.jobKey === jobKey)
  return mine[mine.length - 1]?.args.offerKey as Hex
}

t.test('settleJob gas grows linearly with the advances: no pairwise duplicate check', async (t) => {
  // Measured (bench/settle-gas.ts): about 21,800 gas per advance beyond a base of 120,000; the pairwise check it
  // replaced added about 120 gas times the square of the count (1.82M for these 60, against 1.42M now).
  const advances = 60
  const { jobKey } = await openJob(BigInt(advances) * 2n * USDC)
  const lender = await f.wallet(BigInt(advances) * 2n * USDC)
  const keys: Hex[] = []
  for (let i = 0; i < advances; i++) {
    const a = await terms(lender, { jobKey, amount: USDC, fee: USDC / 10n, reserveShare: 0n })
    await pay(lender, a)
    keys.push(a.offerKey)
  }
  const gas = await f.publicClient.estimateContractGas({ account: f.operator.account, address: f.facility, abi: creditFacilityV2Abi, functionName: 'settleJob', args: [jobKey, ascendingKeys(keys)] })
  t.ok(gas < 150_000n + BigInt(advances) * 25_000n, `settling ${advances} advances takes ${gas} gas, under 25,000 each`)
  await f.call(f.operator, 'settleJob', [jobKey, ascendingKeys(keys)])
  t.equal((await f.job(jobKey)).status, JobStatus.Settled)
  await f.checkConservation(t)
})

t.test('failJob', async (t) => {
  t.test('the escrow goes back to the client at once; collateral waits for the unresolved advance', async (t) => {
    const { jobKey, client, borrower } = await openJob(200n * USDC, 10n * USDC)
    const adv = await advance(jobKey, { amount: 40n * USDC, fee: 4n * USDC, reserveShare: 1n * USDC })
    await rejectsWith(t, f.call(borrower, 'failJob', [jobKey]), 'NotOperator', 'not the operator')
    const before = await balances(f.token, client.account.address, borrower.account.address, f.facility)
    const hash = await f.call(f.operator, 'failJob', [jobKey])
    t.strictSame(await deltas(f.token, [client.account.address, borrower.account.address, f.facility], before), [200n * USDC, 0n, -200n * USDC])
    t.same((await f.events(hash)).map((e) => e.eventName), ['JobFailed'])
    t.match(await f.job(jobKey), { status: JobStatus.Failed, escrow: 0n, collateral: 10n * USDC, unresolved: 1n })
    await rejectsWith(t, f.call(f.operator, 'failJob', [jobKey]), 'JobNotOpen', 'failed twice')
    await rejectsWith(t, f.call(f.operator, 'settleJob', [jobKey, [adv.offerKey]]), 'JobNotOpen', 'settled after failing')
    // The liquidation takes the collateral for the lender; the job, now resolved, closes with nothing left.
    const lenderBefore = await f.balance(adv.lender.account.address)
    const reserve = await f.reserve()
    const liquidation = await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    const fromReserve = reserve < 33n * USDC ? reserve : 33n * USDC
    t.equal((await f.balance(adv.lender.account.address)) - lenderBefore, 10n * USDC + fromReserve)
    t.same((await f.events(liquidation)).map((e) => e.eventName), ['Liquidated', 'JobClosed'])
    t.match(await f.job(jobKey), { status: JobStatus.Closed, collateral: 0n, unresolved: 0n })
  })

  t.test('a failed job whose advance is repaid in full closes and releases the collateral', async (t) => {
    const { jobKey, borrower } = await openJob(100n * USDC, 30n * USDC)
    const adv = await advance(jobKey, { amount: 20n * USDC, fee: 2n * USDC, reserveShare: 1n * USDC })
    await f.call(f.operator, 'failJob', [jobKey])
    await f.call(borrower, 'repay', [adv.offerKey, 10n * USDC])
    t.match(await f.job(jobKey), { status: JobStatus.Failed, collateral: 30n * USDC }, 'a partial repayment resolves nothing')
    const before = await f.balance(borrower.account.address)
    const hash = await f.call(borrower, 'repay', [adv.offerKey, 12n * USDC])
    t.equal((await f.balance(borrower.account.address)) - before, 30n * USDC - 12n * USDC, 'paid 12, got the 30 of collateral back')
    t.same((await f.events(hash)).map((e) => e.eventName), ['Repaid', 'JobClosed'])
    t.match(await f.job(jobKey), { status: JobStatus.Closed, collateral: 0n, outstanding: 0n })
  })

  t.test('a failed job with no advance closes at once', async (t) => {
    const { jobKey, client, borrower } = await openJob(70n * USDC, 7n * USDC)
    const before = await balances(f.token, client.account.address, borrower.account.address)
    const hash = await f.call(f.operator, 'failJob', [jobKey])
    t.strictSame(await deltas(f.token, [client.account.address, borrower.account.address], before), [70n * USDC, 7n * USDC])
    const events = await f.events(hash)
    t.same(events.map((e) => e.eventName), ['JobFailed', 'JobClosed'])
    t.match(events[1]?.args, { jobKey, borrower: borrower.account.address, collateralReleased: 7n * USDC })
    await rejectsWith(t, f.call(f.operator, 'failJob', [nextJobKey()]), 'UnknownJob', 'unknown job')
  })

  t.test('token conservation', (t) => f.checkConservation(t))
})

t.test('liquidate', async (t) => {
  // A token of its own, so that the reserve starts at zero and every step's amount is exact.
  const asset = await f.deployToken('LIQ')
  const payer = await f.wallet(10_000n * USDC, asset)
  const seed = await advance(zeroHash, { amount: 100n * USDC, fee: 50n * USDC, reserveShare: 50n * USDC }, asset)
  await f.call(payer, 'repay', [seed.offerKey, 150n * USDC])
  t.equal(await f.reserve(asset), 50n * USDC, 'the reserve holds 50')

  t.test('every step in order: collateral, backing, reserve (subrogated), shortfall', async (t) => {
    const now = await f.chainNow()
    const { jobKey, client } = await openJob(1_000n * USDC, 30n * USDC, asset)
    const adv = await advance(jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 2n * USDC, dueAt: now + 120n }, asset)
    await rejectsWith(t, f.call(client, 'liquidate', [adv.offerKey, 0n]), 'NotOperator', 'not the operator')
    await rejectsWith(t, f.call(f.operator, 'liquidate', [adv.offerKey, 0n]), 'NotDefaulted', 'open job, not yet due')
    await f.advanceTime(180)
    const lenderBefore = await f.balance(adv.lender.account.address, asset)
    const hash = await f.call(f.operator, 'liquidate', [adv.offerKey, 20n * USDC])
    // owed 108 + 2. collateral 30 -> lender (78 left); backing 20 (58 left); reserve 50 -> lender (8 left), now owed
    // to the reserve: 2 + 50; shortfall = 110 - 30 - 20 - 50 = 10.
    t.equal((await f.balance(adv.lender.account.address, asset)) - lenderBefore, 80n * USDC, 'the lender got collateral + reserve')
    t.match((await f.events(hash))[0]?.args, { offerKey: adv.offerKey, jobKey, lender: adv.lender.account.address, fromCollateral: 30n * USDC, fromBacking: 20n * USDC, fromReserve: 50n * USDC, shortfall: 10n * USDC })
    t.match(await f.advance(adv.offerKey), { lenderOwed: 8n * USDC, reserveOwed: 52n * USDC, liquidated: true })
    t.equal(await f.reserve(asset), 0n)
    t.match(await f.job(jobKey), { collateral: 0n, escrow: 1_000n * USDC, outstanding: 1n, unresolved: 0n, status: JobStatus.Open })
    await rejectsWith(t, f.call(f.operator, 'liquidate', [adv.offerKey, 0n]), 'AlreadyLiquidated', 'once only')

    // The borrower still owes 60; a repayment on the liquidated advance pays the lender first, then the reserve.
    const who = [payer.account.address, adv.lender.account.address] as Address[]
    const before = await balances(asset, ...who)
    const repaid = await f.call(payer, 'repay', [adv.offerKey, 100n * USDC])
    t.strictSame(await deltas(asset, who, before), [-60n * USDC, 8n * USDC])
    t.equal(await f.reserve(asset), 52n * USDC, 'the reserve recovered what it paid, and its share')
    t.match((await f.events(repaid))[0]?.args, { toLender: 8n * USDC, toReserve: 52n * USDC, lenderOwed: 0n, reserveOwed: 0n })
    t.match(await f.job(jobKey), { outstanding: 0n, unresolved: 0n })
    await f.call(f.operator, 'settleJob', [jobKey, []])
    await f.checkConservation(t, asset)
  })

  t.test('collateral pays the lender first, then the reserve share', async (t) => {
    const { jobKey } = await openJob(10n * USDC, 109n * USDC, asset)
    const adv = await advance(jobKey, { amount: 100n * USDC, fee: 10n * USDC, reserveShare: 2n * USDC }, asset)
    await f.call(f.operator, 'failJob', [jobKey])
    const reserveBefore = await f.reserve(asset)
    const hash = await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    t.match((await f.events(hash))[0]?.args, { fromCollateral: 109n * USDC, fromBacking: 0n, fromReserve: 0n, shortfall: 1n * USDC })
    t.equal(await f.reserve(asset), reserveBefore + 1n * USDC)
    t.match(await f.advance(adv.offerKey), { lenderOwed: 0n, reserveOwed: 1n * USDC })
    t.match(await f.job(jobKey), { status: JobStatus.Closed, outstanding: 1n, unresolved: 0n }, 'a failed job closes at its last liquidation; the shortfall stays owed')
  })

  t.test('an advance fully covered by collateral stops being outstanding, so its job can still settle', async (t) => {
    const now = await f.chainNow()
    const { jobKey, borrower } = await openJob(100n * USDC, 200n * USDC, asset)
    const adv = await advance(jobKey, { amount: 50n * USDC, fee: 5n * USDC, reserveShare: 1n * USDC, dueAt: now + 10n }, asset)
    await f.advanceTime(30)
    await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    t.match(await f.job(jobKey), { outstanding: 0n, unresolved: 0n, collateral: 145n * USDC })
    const before = await f.balance(borrower.account.address, asset)
    await f.call(f.operator, 'settleJob', [jobKey, []])
    t.equal((await f.balance(borrower.account.address, asset)) - before, 245n * USDC)
  })

  t.test('a failed job gates liquidation before the due date; a backing advance only past it', async (t) => {
    const { jobKey } = await openJob(10n * USDC, 0n, asset)
    const adv = await advance(jobKey, { amount: 5n * USDC, fee: 1n * USDC, reserveShare: 0n }, asset)
    await rejectsWith(t, f.call(f.operator, 'liquidate', [adv.offerKey, 0n]), 'NotDefaulted', 'open and not due')
    await f.call(f.operator, 'failJob', [jobKey])
    await f.call(f.operator, 'liquidate', [adv.offerKey, 0n])
    t.match(await f.advance(adv.offerKey), { liquidated: true })

    const now = await f.chainNow()
    const backed = await advance(zeroHash, { amount: 40n * USDC, fee: 4n * USDC, reserveShare: 1n * USDC, dueAt: now + 20n }, asset)
    await rejectsWith(t, f.call(f.operator, 'liquidate', [backed.offerKey, 0n]), 'NotDefaulted', 'backing advance not due')
    await f.advanceTime(40)
    const reserve = await f.reserve(asset)
    const hash = await f.call(f.operator, 'liquidate', [backed.offerKey, 10n ** 30n])
    // No collateral; the backing covers the whole lender claim (bounded by it), so the reserve pays nothing.
    t.match((await f.events(hash))[0]?.args, { jobKey: zeroHash, fromCollateral: 0n, fromBacking: 43n * USDC, fromReserve: 0n, shortfall: 1n * USDC })
    t.equal(await f.reserve(asset), reserve)
  })

  t.test('misuse', async (t) => {
    await rejectsWith(t, f.call(f.operator, 'liquidate', [nextOfferKey(), 0n]), 'UnknownAdvance', 'unknown advance')
    await rejectsWith(t, f.call(f.operator, 'liquidate', [seed.offerKey, 0n]), 'NothingOwed', 'a repaid advance')
  })

  t.test('token conservation', (t) => f.checkConservation(t, asset))
})

t.test('misuse: zero amounts, zero and unknown keys, wrong callers, roles', async (t) => {
  const { jobKey, client, borrower } = await openJob(10n * USDC)
  const stranger = await f.wallet(100n * USDC)
  await rejectsWith(t, f.call(client, 'fundJob', [nextJobKey(), f.token, 0n, borrower.account.address]), 'ZeroAmount', 'zero escrow')
  await rejectsWith(t, f.call(client, 'fundJob', [zeroHash, f.token, 1n, borrower.account.address]), 'ZeroKey', 'zero job key')
  await rejectsWith(t, f.call(client, 'fundJob', [nextJobKey(), f.token, 1n, zeroAddress]), 'ZeroAddress', 'no borrower')
  await rejectsWith(t, f.call(stranger, 'fundJob', [jobKey, f.token, 1n, stranger.account.address]), 'JobAlreadyFunded', 'a funded job key')
  await rejectsWith(t, f.call(borrower, 'postCollateral', [jobKey, f.token, 0n]), 'ZeroAmount', 'zero collateral')
  await rejectsWith(t, f.call(stranger, 'postCollateral', [jobKey, f.token, 1n]), 'NotBorrower', 'not the borrower')
  await rejectsWith(t, f.call(borrower, 'postCollateral', [jobKey, f.network.identityRegistry, 1n]), 'AssetMismatch', 'other asset')
  await rejectsWith(t, f.call(borrower, 'postCollateral', [nextJobKey(), f.token, 1n]), 'UnknownJob', 'unknown job')
  await rejectsWith(t, f.call(stranger, 'failJob', [jobKey]), 'NotOperator', 'a stranger fails a job')
  await rejectsWith(t, f.call(stranger, 'settleJob', [jobKey, []]), 'NotOperator', 'a stranger settles a job')
  await rejectsWith(t, f.call(f.operator, 'failJob', [zeroHash]), 'UnknownJob', 'zero job key')

  const read = (functionName: 'operator' | 'leaseSigner') => f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName })
  t.equal(await read('operator'), f.operator.account.address)
  t.equal(await read('leaseSigner'), f.signer.address)
  const domain = await f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'eip712Domain' })
  t.same([domain[1], domain[2], domain[3], getAddress(domain[4])], ['CreditFacility', '2', BigInt(f.network.chainId), getAddress(f.facility)], 'EIP-712 domain')

  const deployer = await f.wallet()
  await t.rejects(
    deployCreditFacilityV2(deployer.wallet, f.publicClient, { operator: f.operator.account.address, leaseSigner: f.operator.account.address }),
    new RegExp(toFunctionSelector('RolesNotSeparate(address)')),
    'one key cannot be both operator and lease signer',
  )
  await t.rejects(
    deployCreditFacilityV2(deployer.wallet, f.publicClient, { operator: zeroAddress, leaseSigner: f.signer.address }),
    new RegExp(toFunctionSelector('ZeroAddress()')),
    'no operator',
  )
  t.test('token conservation', (t) => f.checkConservation(t))
})

t.test('reentrancy through a hostile token is refused on every entry point', async (t) => {
  const hostile = compileSolidity('ReentrantToken', reentrantTokenSource)
  const asset = await f.deploy(hostile.abi, hostile.bytecode, [])
  const arm = async (functionName: string, args: readonly unknown[]) => {
    const data = encodeFunctionData({ abi: creditFacilityV2Abi, functionName, args } as Parameters<typeof encodeFunctionData>[0])
    const hash = await f.operator.wallet.writeContract({ address: asset, abi: hostile.abi, functionName: 'arm', args: [f.facility, data] })
    await f.publicClient.waitForTransactionReceipt({ hash })
  }
  const { jobKey, borrower } = await openJob(1_000n * USDC, 0n, asset)
  const adv = await advance(jobKey, { amount: 10n * USDC, fee: 1n * USDC, reserveShare: 0n }, asset)
  const unadvanced = await openJob(100n * USDC, 0n, asset)
  const failing = await openJob(100n * USDC, 0n, asset)
  t.pass('the hostile token works as a token while disarmed')

  await arm('repay', [adv.offerKey, 1n])
  await rejectsWith(t, f.call(borrower, 'repay', [adv.offerKey, 1n]), 'ReentrancyGuardReentrantCall', 'repay re-entered from repay')
  await arm('repay', [adv.offerKey, 1n])
  const lender = await f.wallet(100n * USDC, asset)
  await rejectsWith(t, pay(lender, await terms(lender, { jobKey, asset, amount: 5n * USDC })), 'ReentrancyGuardReentrantCall', 'repay re-entered from paySupplier')
  await arm('liquidate', [adv.offerKey, 0n])
  await rejectsWith(t, f.call(borrower, 'postCollateral', [jobKey, asset, 1n]), 'ReentrancyGuardReentrantCall', 'liquidate re-entered from postCollateral')
  // A transfer out of the contract that re-enters is refused by the guard too, and, as any transfer the token refuses,
  // held for its recipient (PaymentHeld): the call goes on, the re-entered call changed nothing. (The token's revert
  // undoes its disarming, so it stays armed: each transfer below re-enters.)
  const held = (account: Address) => f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [asset, account] })
  await arm('repay', [adv.offerKey, 1n])
  const settled = await f.call(f.operator, 'settleJob', [jobKey, [adv.offerKey]])
  t.ok((await f.events(settled)).some((e) => e.eventName === 'PaymentHeld'), 'repay re-entered from settleJob: refused, the lender\'s part held')
  t.equal(await held(adv.lender.account.address), 11n * USDC)
  t.equal(await held(borrower.account.address), 989n * USDC, 'and the borrower\'s rest')
  t.match(await f.job(jobKey), { status: JobStatus.Settled })
  const strayKey = nextJobKey()
  await arm('fundJob', [strayKey, asset, 1n, borrower.account.address])
  await f.call(f.operator, 'failJob', [failing.jobKey])
  t.equal(await held(failing.client.account.address), 100n * USDC, 'fundJob re-entered from failJob: refused, the refund held')
  // The job never advanced on, past its reclaim time: its client's reclaimJob moves tokens too.
  await f.advanceTime(Number(await f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' })))
  await arm('fundJob', [strayKey, asset, 1n, borrower.account.address])
  await f.call(unadvanced.client, 'reclaimJob', [unadvanced.jobKey])
  t.equal(await held(unadvanced.client.account.address), 100n * USDC, 'fundJob re-entered from reclaimJob: refused, the refund held')
  t.match(await f.job(unadvanced.jobKey), { status: JobStatus.Reclaimed })
  t.match(await f.job(strayKey), { status: JobStatus.None }, 'no re-entered fundJob took effect')
  await arm('repay', [adv.offerKey, 1n])
  await rejectsWith(t, f.call(borrower, 'claimHeld', [asset, adv.lender.account.address]), 'ReentrancyGuardReentrantCall', 'repay re-entered from claimHeld')
  // Disarmed again, the held payments go out: the refusals above were the guard's.
  await f.operator.wallet.writeContract({ address: asset, abi: hostile.abi, functionName: 'arm', args: [zeroAddress, '0x'] }).then((hash) => f.publicClient.waitForTransactionReceipt({ hash }))
  const before = await f.balance(adv.lender.account.address, asset)
  await f.call(borrower, 'claimHeld', [asset, adv.lender.account.address])
  t.equal((await f.balance(adv.lender.account.address, asset)) - before, 11n * USDC)
  await f.checkConservation(t, asset)
})

/** An ERC-20 whose transfers call back into a target first (when armed), bubbling the callee's revert. */
const reentrantTokenSource = `
// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;
contract ReentrantToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    address public target;
    bytes public payload;
    function arm(address target_, bytes calldata payload_) external { target = target_; payload = payload_; }
    function mint(address to, uint256 value) external { balanceOf[to] += value; }
    function approve(address spender, uint256 value) external returns (bool) { allowance[msg.sender][spender] = value; return true; }
    function transfer(address to, uint256 value) external returns (bool) {
        _reenter();
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        return true;
    }
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        _reenter();
        allowance[from][msg.sender] -= value;
        balanceOf[from] -= value;
        balanceOf[to] += value;
        return true;
    }
    function _reenter() private {
        address callee = target;
        if (callee == address(0)) return;
        target = address(0);
        (bool ok, bytes memory data) = callee.call(payload);
        if (!ok) assembly { revert(add(data, 32), mload(data)) }
    }
}
`
