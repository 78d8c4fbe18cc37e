// The TypeScript model of CreditFacilityV2 (src/chain/facility-model.ts) against the real contract on anvil: random
// sequences of calls (fund, collateral, pay with valid and invalid authorizations, repay partial/exact/over, settle,
// fail, reclaim before and after the delay, liquidate before and after due, each by the right party or a stranger;
// the token's blacklist on and off for a party, and claims of held payments) run on both, and after every step the
// outcome (the revert's name and arguments, or the facility's events) and the state (every job, advance, reserve,
// held payment and token balance touched) must be identical. Each sequence starts from one evm_snapshot.
import { deepStrictEqual } from 'node:assert/strict'
import fc from 'fast-check'
import t from 'tap'
import { decodeErrorResult, erc20Abi, maxUint256, zeroHash, type Abi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { decodeFacilityLog } from '../../src/chain/events-v2.ts'
import { FacilityModel, JobStatus, type ModelLease, type ModelOutcome, type ModelSignature } from '../../src/chain/facility-model.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import { LeaseSigner } from '../../src/chain/lease-authorization.ts'
import { ascendingKeys } from '../../src/chain/operator.ts'
import { setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'

const sequences = 20
const stepsPerSequence = 15
/** Short, so that random waits (up to 4,000 s each) reach it within a sequence. */
const reclaimDelaySeconds = 3_000n
/** Small, so that random payments reach it (TooManyAdvances). */
const advancesPerJobMax = 3n

const errorsAbi = [...creditFacilityV2Abi, ...testStablecoinAbi.filter((item) => item.type === 'error')] as Abi

type Actors = {
  operator: Wallet
  clients: Wallet[]
  borrowers: Wallet[]
  lenders: Wallet[]
  stranger: Wallet
  suppliers: Address[]
}

type Aim = 'live' | 'any'

type Step =
  | { kind: 'fund'; client: number; job: number; amount: bigint; borrower: number }
  | { kind: 'collateral'; byStranger: boolean; aim: Aim; job: number; amount: bigint }
  | {
      kind: 'pay'
      lender: number
      byStranger: boolean
      aim: Aim
      offer: number
      job: number | null
      amount: bigint
      fee: bigint
      reserveShare: bigint
      deadlineOffset: number
      dueOffset: number
      signature: 'valid' | 'other' | 'malformed'
      supplier: 'supplier' | 'borrower' | 'payer'
    }
  | { kind: 'repay'; payer: 'borrower' | 'stranger'; aim: Aim; offer: number; how: 'partial' | 'exact' | 'over' | 'zero' }
  | { kind: 'settle'; byStranger: boolean; aim: Aim; job: number; keys: 'exact' | 'missing' | 'duplicate' | 'foreign' | 'descending' }
  | { kind: 'fail'; byStranger: boolean; aim: Aim; job: number }
  | { kind: 'reclaim'; byStranger: boolean; byBorrower?: boolean; aim: Aim; job: number }
  | { kind: 'liquidate'; byStranger: boolean; aim: Aim; offer: number; backing: bigint }
  | { kind: 'wait'; seconds: number }
  | { kind: 'blacklist'; holder: Party; on: boolean }
  | { kind: 'claim'; holder: Party; byStranger: boolean }

type Party = 'client0' | 'client1' | 'borrower0' | 'borrower1' | 'lender0' | 'lender1' | 'supplier'
const parties: Party[] = ['client0', 'client1', 'borrower0', 'borrower1', 'lender0', 'lender1', 'supplier']

const jobs = 3
const offers = 8
/** A stranger calls now and then: most steps are by the right party, so that the sequences get somewhere. */
const rarely = fc.constantFrom(false, false, false, false, true)
/** Most steps aim at a live job or advance (resolved against the model when the step runs), the rest at any key. */
const aim = fc.constantFrom('live', 'live', 'live', 'live', 'any') as fc.Arbitrary<'live' | 'any'>
const amountArb = fc.oneof({ weight: 1, arbitrary: fc.constant(0n) }, { weight: 8, arbitrary: fc.bigInt({ min: 1n, max: 300n }).map((n) => n * USDC) })

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fund' as const), client: fc.nat(1), job: fc.nat(jobs - 1), amount: amountArb, borrower: fc.nat(1) }) },
  fc.record({ kind: fc.constant('collateral' as const), byStranger: rarely, aim, job: fc.nat(jobs - 1), amount: amountArb }),
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      lender: fc.nat(1),
      byStranger: rarely,
      aim,
      offer: fc.nat(offers - 1),
      job: fc.option(fc.nat(jobs - 1), { freq: 5 }),
      amount: amountArb,
      fee: fc.bigInt({ min: 0n, max: 20n }).map((n) => n * USDC),
      reserveShare: fc.bigInt({ min: 0n, max: 21n }).map((n) => n * (USDC / 10n)),
      deadlineOffset: fc.integer({ min: -20, max: 600 }),
      dueOffset: fc.integer({ min: 0, max: 3_000 }),
      signature: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'valid', 'valid', 'other', 'malformed') as fc.Arbitrary<'valid' | 'other' | 'malformed'>,
      supplier: fc.constantFrom('supplier', 'supplier', 'supplier', 'supplier', 'supplier', 'borrower', 'payer') as fc.Arbitrary<'supplier' | 'borrower' | 'payer'>,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('repay' as const),
      payer: fc.constantFrom('borrower', 'stranger') as fc.Arbitrary<'borrower' | 'stranger'>,
      aim,
      offer: fc.nat(offers - 1),
      how: fc.constantFrom('partial', 'exact', 'over', 'zero') as fc.Arbitrary<'partial' | 'exact' | 'over' | 'zero'>,
    }),
  },
  fc.record({
    kind: fc.constant('settle' as const),
    byStranger: rarely,
    aim,
    job: fc.nat(jobs - 1),
    keys: fc.constantFrom('exact', 'exact', 'missing', 'duplicate', 'foreign', 'descending') as fc.Arbitrary<'exact' | 'missing' | 'duplicate' | 'foreign' | 'descending'>,
  }),
  fc.record({ kind: fc.constant('fail' as const), byStranger: rarely, aim, job: fc.nat(jobs - 1) }),
  fc.record({ kind: fc.constant('reclaim' as const), byStranger: rarely, byBorrower: fc.boolean(), aim, job: fc.nat(jobs - 1) }),
  fc.record({
    kind: fc.constant('liquidate' as const),
    byStranger: rarely,
    aim,
    offer: fc.nat(offers - 1),
    backing: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 200n }).map((n) => n * USDC)),
  }),
  fc.record({ kind: fc.constant('wait' as const), seconds: fc.integer({ min: 1, max: 4_000 }) }),
  fc.record({ kind: fc.constant('blacklist' as const), holder: fc.constantFrom(...parties), on: fc.constantFrom(true, true, false) }),
  fc.record({ kind: fc.constant('claim' as const), holder: fc.constantFrom(...parties), byStranger: fc.boolean() }),
)

const pay = (offer: number, job: number | null, amount: bigint, dueOffset = 1_000): Step => ({
  kind: 'pay', lender: 0, byStranger: false, aim: 'live', offer, job, amount, fee: 10n * USDC, reserveShare: 1n * USDC,
  deadlineOffset: 300, dueOffset, signature: 'valid', supplier: 'supplier',
})
const scriptedSequence: Step[] = [
  { kind: 'fund', client: 0, job: 0, amount: 500n * USDC, borrower: 0 },
  { kind: 'collateral', byStranger: false, aim: 'live', job: 0, amount: 50n * USDC },
  pay(0, 0, 100n * USDC),
  pay(0, 0, 50n * USDC),
  { kind: 'repay', payer: 'borrower', aim: 'live', offer: 0, how: 'partial' },
  { kind: 'repay', payer: 'borrower', aim: 'live', offer: 0, how: 'exact' },
  { kind: 'repay', payer: 'borrower', aim: 'live', offer: 0, how: 'over' },
  pay(0, 0, 200n * USDC),
  { kind: 'settle', byStranger: false, aim: 'live', job: 0, keys: 'exact' },
  { kind: 'fund', client: 1, job: 1, amount: 300n * USDC, borrower: 1 },
  { kind: 'collateral', byStranger: false, aim: 'live', job: 0, amount: 20n * USDC },
  pay(0, 0, 100n * USDC),
  { kind: 'fail', byStranger: false, aim: 'live', job: 0 },
  { kind: 'liquidate', byStranger: false, aim: 'live', offer: 0, backing: 0n },
  pay(0, null, 60n * USDC, 100),
  { kind: 'liquidate', byStranger: false, aim: 'live', offer: 0, backing: 10n * USDC },
  { kind: 'wait', seconds: 200 },
  { kind: 'liquidate', byStranger: false, aim: 'live', offer: 0, backing: 10n * USDC },
  { kind: 'repay', payer: 'stranger', aim: 'live', offer: 0, how: 'over' },
  // Job 2, the only open one, is never advanced on: too early, by a stranger, then its borrower ends it (the escrow
  // back to the client, the collateral to the borrower); after that nothing reaches it, a payment included.
  { kind: 'fund', client: 0, job: 2, amount: 100n * USDC, borrower: 1 },
  { kind: 'collateral', byStranger: false, aim: 'live', job: 2, amount: 30n * USDC },
  { kind: 'reclaim', byStranger: false, aim: 'live', job: 2 },
  { kind: 'wait', seconds: Number(reclaimDelaySeconds) },
  { kind: 'reclaim', byStranger: true, aim: 'live', job: 2 },
  { kind: 'reclaim', byStranger: false, byBorrower: true, aim: 'live', job: 2 },
  { kind: 'reclaim', byStranger: false, aim: 'live', job: 2 },
  { kind: 'reclaim', byStranger: false, aim: 'any', job: 2 },
  pay(1, 2, 10n * USDC),
]

// Refused recipients and the cap: a full job, a blacklisted lender and borrower at settlement (held, claimed too early,
// claimed), a repayment to a blacklisted lender, a failure refunding a blacklisted client.
const heldSequence: Step[] = [
  { kind: 'fund', client: 0, job: 0, amount: 500n * USDC, borrower: 0 },
  { kind: 'collateral', byStranger: false, aim: 'live', job: 0, amount: 50n * USDC },
  pay(0, 0, 10n * USDC),
  pay(0, 0, 10n * USDC),
  pay(0, 0, 10n * USDC),
  pay(0, 0, 10n * USDC),
  { kind: 'blacklist', holder: 'lender0', on: true },
  { kind: 'blacklist', holder: 'borrower0', on: true },
  { kind: 'settle', byStranger: false, aim: 'live', job: 0, keys: 'exact' },
  { kind: 'claim', holder: 'lender0', byStranger: true },
  { kind: 'blacklist', holder: 'lender0', on: false },
  { kind: 'claim', holder: 'lender0', byStranger: true },
  { kind: 'claim', holder: 'lender0', byStranger: false },
  { kind: 'fund', client: 1, job: 1, amount: 100n * USDC, borrower: 1 },
  pay(0, 1, 10n * USDC),
  { kind: 'blacklist', holder: 'lender0', on: true },
  { kind: 'repay', payer: 'borrower', aim: 'live', offer: 0, how: 'exact' },
  { kind: 'blacklist', holder: 'client1', on: true },
  { kind: 'fail', byStranger: false, aim: 'live', job: 1 },
  { kind: 'claim', holder: 'borrower0', byStranger: false },
]

/** JSON-comparable: bigints as strings, so that assertion messages are readable. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)))
}

t.test('the model and the contract agree on random call sequences', async (t) => {
  const f: V2Fixture = await setupFacilityV2(t, { reclaimDelaySeconds, advancesPerJobMax })
  // Each call is mined at the time the sequence gives it (send: setNextBlockTimestamp, then the transaction). The
  // devnet also mines a block every second: one mined between the two took that time, and the call landed a second
  // later than the model's (a CI run on a loaded machine: fundedAt 978 on chain, 977 in the model). Blocks only for
  // transactions here.
  await f.testClient.setIntervalMining({ interval: 0 })
  await f.testClient.setAutomine(true)
  const funded = async (tokens: bigint, allowance: bigint = maxUint256): Promise<Wallet> => {
    const w = await f.wallet(tokens)
    const hash = await w.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'approve', args: [f.facility, allowance] })
    await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    return w
  }
  const actors: Actors = {
    operator: f.operator,
    clients: [await funded(2_000n * USDC), await funded(2_000n * USDC)],
    borrowers: [await funded(5_000n * USDC), await funded(5_000n * USDC)],
    // The second lender is short of tokens and of allowance: payments can fail in the token, as they can for real.
    lenders: [await funded(10_000n * USDC), await funded(150n * USDC, 250n * USDC)],
    stranger: await funded(5_000n * USDC),
    suppliers: [privateKeyToAccount(generatePrivateKey()).address],
  }
  await f.testClient.setBalance({ address: f.operator.account.address, value: 10n ** 20n })
  const holders: Address[] = [
    ...actors.clients, ...actors.borrowers, ...actors.lenders, actors.stranger,
  ].map((w) => w.account.address).concat(actors.suppliers, [f.facility])
  const salt = newKeySalt()
  const jobKeys = Array.from({ length: jobs }, (_, i) => jobKeyOf(`job_model_${i}`))
  const offerKeys = Array.from({ length: offers }, (_, i) => offerKeyOf(salt, `off_model_${i}`))
  const otherSigner = new LeaseSigner({ privateKey: generatePrivateKey(), chainId: f.network.chainId, verifyingContract: f.facility })

  const initialBalances = await Promise.all(holders.map((h) => f.balance(h)))
  const initialAllowances = await Promise.all(
    holders.map((h) => f.publicClient.readContract({ address: f.token, abi: erc20Abi, functionName: 'allowance', args: [h, f.facility] })),
  )
  const newModel = (): FacilityModel => {
    const model = new FacilityModel({ address: f.facility, operator: f.operator.account.address, leaseSigner: f.signer.address, reclaimDelay: reclaimDelaySeconds, advancesPerJobMax })
    holders.forEach((h, i) => {
      model.setBalance(f.token, h, initialBalances[i] as bigint)
      model.setAllowance(f.token, h, f.facility, initialAllowances[i] as bigint)
    })
    return model
  }

  /** Sends the call with a fixed gas limit (no estimate: a reverting call is mined too) at block time `now`. */
  const send = async (who: Wallet, now: bigint, functionName: string, args: readonly unknown[]): Promise<ModelOutcome> => {
    await f.testClient.setNextBlockTimestamp({ timestamp: now })
    const hash = await who.wallet.writeContract({
      address: f.facility, abi: creditFacilityV2Abi, functionName, args, gas: 2_000_000n,
    } as Parameters<typeof who.wallet.writeContract>[0])
    const receipt = await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    if (receipt.status === 'success') {
      const events = receipt.logs.flatMap((log) => {
        const event = decodeFacilityLog(f.facility, log, 0)
        return event === undefined ? [] : [{ name: event.name, args: event.args as Record<string, unknown> }]
      })
      return { ok: true, events }
    }
    const trace = (await f.testClient.request({ method: 'debug_traceTransaction', params: [hash, { tracer: 'callTracer' }] } as never)) as { output?: Hex }
    const decoded = decodeErrorResult({ abi: errorsAbi, data: trace.output ?? '0x' })
    return { ok: false, error: decoded.errorName, args: [...(decoded.args ?? [])] }
  }

  const compareState = async (model: FacilityModel, where: string): Promise<void> => {
    const [chainJobs, chainAdvances, reserve, balances, held, heldOf] = await Promise.all([
      Promise.all(jobKeys.map((k) => f.job(k))),
      Promise.all(offerKeys.map((k) => f.advance(k))),
      f.reserve(),
      Promise.all(holders.map((h) => f.balance(h))),
      Promise.all(holders.map((h) => f.held(h))),
      f.publicClient.readContract({ address: f.facility, abi: creditFacilityV2Abi, functionName: 'heldOf', args: [f.token] }),
    ])
    deepStrictEqual(plain(held), plain(holders.map((h) => model.heldFor(f.token, h))), `${where}: held payments`)
    deepStrictEqual(heldOf, model.heldOf(f.token), `${where}: heldOf`)
    deepStrictEqual(plain(chainJobs), plain(jobKeys.map((k) => model.getJob(k))), `${where}: jobs`)
    deepStrictEqual(plain(chainAdvances), plain(offerKeys.map((k) => model.getAdvance(k))), `${where}: advances`)
    deepStrictEqual(reserve, model.reserveOf(f.token), `${where}: reserve`)
    deepStrictEqual(plain(balances), plain(holders.map((h) => model.balanceOf(f.token, h))), `${where}: token balances`)
  }

  const partyWallet = (party: Party): Wallet | undefined =>
    party === 'supplier' ? undefined : ({ client: actors.clients, borrower: actors.borrowers, lender: actors.lenders }[party.slice(0, -1) as 'client'])[Number(party.slice(-1))]
  const partyAddress = (party: Party): Address => partyWallet(party)?.account.address ?? (actors.suppliers[0] as Address)

  let snapshot = await f.testClient.snapshot()
  const seen = new Map<string, number>()
  let run = 0

  const runSequence = async (steps: Step[]): Promise<void> => {
      await f.testClient.revert({ id: snapshot })
      snapshot = await f.testClient.snapshot()
      run++
      const model = newModel()
      let now = (await f.chainNow()) + 1n
      for (const [index, step] of steps.entries()) {
        const where = `sequence ${run} step ${index} ${JSON.stringify(plain(step))}`
        if (step.kind === 'wait') {
          now += BigInt(step.seconds)
          continue
        }
        if (step.kind === 'blacklist') {
          await f.blacklist(partyAddress(step.holder), step.on)
          model.setRefused(partyAddress(step.holder), step.on)
          continue
        }
        now += 1n
        const ctx = (who: Wallet) => ({ sender: who.account.address, nowSeconds: now })
        const pickJob = (aimAt: Aim, index: number): Hex => {
          const open = jobKeys.filter((k) => model.getJob(k).status === JobStatus.Open)
          return aimAt === 'live' && open.length > 0 ? (open[index % open.length] as Hex) : (jobKeys[index] as Hex)
        }
        const pickOffer = (aimAt: Aim, index: number, live: (k: Hex) => boolean): Hex => {
          const candidates = offerKeys.filter(live)
          return aimAt === 'live' && candidates.length > 0 ? (candidates[index % candidates.length] as Hex) : (offerKeys[index] as Hex)
        }
        const owing = (k: Hex): boolean => model.getAdvance(k).lenderOwed + model.getAdvance(k).reserveOwed > 0n
        let call: { who: Wallet; functionName: string; args: readonly unknown[]; model: () => ModelOutcome }
        switch (step.kind) {
          case 'fund': {
            const who = actors.clients[step.client] as Wallet
            const args = [jobKeys[step.job] as Hex, f.token, step.amount, (actors.borrowers[step.borrower] as Wallet).account.address] as const
            call = { who, functionName: 'fundJob', args, model: () => model.fundJob(ctx(who), ...args) }
            break
          }
          case 'collateral': {
            const jobKey = pickJob(step.aim, step.job)
            const job = model.getJob(jobKey)
            const who = step.byStranger ? actors.stranger : (actors.borrowers.find((b) => b.account.address === job.borrower) ?? (actors.borrowers[0] as Wallet))
            const args = [jobKey, f.token, step.amount] as const
            call = { who, functionName: 'postCollateral', args, model: () => model.postCollateral(ctx(who), ...args) }
            break
          }
          case 'pay': {
            const lender = actors.lenders[step.lender] as Wallet
            const who = step.byStranger ? actors.stranger : lender
            const jobKey = step.job === null ? zeroHash : pickJob(step.aim, step.job)
            const borrower = model.getJob(jobKey).borrower
            const supplier = step.supplier === 'payer' ? lender.account.address : step.supplier === 'borrower' && step.job !== null ? borrower : (actors.suppliers[0] as Address)
            const a: ModelLease = {
              offerKey: pickOffer(step.aim, step.offer, (k) => !model.getAdvance(k).exists), jobKey, payer: lender.account.address, supplier, asset: f.token,
              amount: step.amount, fee: step.fee, reserveShare: step.reserveShare,
              deadline: now + BigInt(step.deadlineOffset), dueAt: now + BigInt(step.dueOffset),
            }
            let signature: Hex
            let modelSignature: ModelSignature
            if (step.signature === 'malformed') {
              signature = '0x1234'
              modelSignature = 'malformed'
            } else {
              const by = step.signature === 'valid' ? f.signer : otherSigner
              signature = by.sign(a)
              modelSignature = { recovered: by.address }
            }
            call = { who, functionName: 'paySupplier', args: [a, signature], model: () => model.paySupplier(ctx(who), a, modelSignature) }
            break
          }
          case 'repay': {
            const offerKey = pickOffer(step.aim, step.offer, owing)
            const adv = model.getAdvance(offerKey)
            const owed = adv.lenderOwed + adv.reserveOwed
            const amount = { zero: 0n, partial: owed / 3n + 1n, exact: owed === 0n ? 1n : owed, over: owed + 7n * USDC }[step.how]
            const job = model.getJob(adv.jobKey)
            const who = step.payer === 'stranger' ? actors.stranger : (actors.borrowers.find((b) => b.account.address === job.borrower) ?? (actors.borrowers[0] as Wallet))
            call = { who, functionName: 'repay', args: [offerKey, amount], model: () => model.repay(ctx(who), offerKey, amount) }
            break
          }
          case 'settle': {
            const jobKey = pickJob(step.aim, step.job)
            // In the ascending order settleJob takes (the service's sendSettleJob sorts them the same way).
            const owing = ascendingKeys(offerKeys.filter((k) => {
              const adv = model.getAdvance(k)
              return adv.exists && adv.jobKey === jobKey && adv.lenderOwed + adv.reserveOwed > 0n
            }))
            const foreign = offerKeys.find((k) => !owing.includes(k)) ?? (offerKeys[0] as Hex)
            const keys = {
              exact: owing,
              missing: owing.slice(1),
              duplicate: owing.length > 0 ? [...owing.slice(1), owing[0] as Hex, owing[0] as Hex] : [foreign],
              foreign: [...owing.slice(1), foreign],
              descending: [...owing].reverse(),
            }[step.keys]
            const who = step.byStranger ? actors.stranger : actors.operator
            call = { who, functionName: 'settleJob', args: [jobKey, keys], model: () => model.settleJob(ctx(who), jobKey, keys) }
            break
          }
          case 'fail': {
            const jobKey = pickJob(step.aim, step.job)
            const who = step.byStranger ? actors.stranger : actors.operator
            call = { who, functionName: 'failJob', args: [jobKey], model: () => model.failJob(ctx(who), jobKey) }
            break
          }
          case 'reclaim': {
            const jobKey = pickJob(step.aim, step.job)
            const job = model.getJob(jobKey)
            const client = actors.clients.find((c) => c.account.address === job.client) ?? (actors.clients[0] as Wallet)
            // Its borrower may reclaim too (outsider29: a silent client kept the borrower's collateral otherwise).
            const borrower = actors.borrowers.find((b) => b.account.address === job.borrower) ?? (actors.borrowers[0] as Wallet)
            const who = step.byStranger ? actors.stranger : step.byBorrower === true ? borrower : client
            call = { who, functionName: 'reclaimJob', args: [jobKey], model: () => model.reclaimJob(ctx(who), jobKey) }
            break
          }
          case 'claim': {
            const account = partyAddress(step.holder)
            const who = step.byStranger ? actors.stranger : (partyWallet(step.holder) ?? actors.stranger)
            call = { who, functionName: 'claimHeld', args: [f.token, account], model: () => model.claimHeld(ctx(who), f.token, account) }
            break
          }
          case 'liquidate': {
            const offerKey = pickOffer(step.aim, step.offer, (k) => owing(k) && !model.getAdvance(k).liquidated)
            const who = step.byStranger ? actors.stranger : actors.operator
            call = { who, functionName: 'liquidate', args: [offerKey, step.backing], model: () => model.liquidate(ctx(who), offerKey, step.backing) }
            break
          }
        }
        const onChain = await send(call.who, now, call.functionName, call.args)
        const inModel = call.model()
        deepStrictEqual(plain(inModel), plain(onChain), `${where}: outcome`)
        const label = onChain.ok ? `${call.functionName} ok` : `${call.functionName} ${onChain.error}`
        seen.set(label, (seen.get(label) ?? 0) + 1)
        await compareState(model, where)
      }
  }

  // First scripted sequences through every success path (partial, exact and over-repayment, settlement, failure with
  // collateral, liquidation of a failed job's advance and of a past-due backing advance with reserve and shortfall,
  // repayment after a shortfall), then random ones.
  await runSequence(scriptedSequence)
  await runSequence(heldSequence)
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, { minLength: stepsPerSequence, maxLength: stepsPerSequence }), runSequence),
    // A fixed seed by default (CI reruns what passed); FACILITY_MODEL_SEED explores other sequences.
    { numRuns: sequences, endOnFailure: true, seed: Number(process.env.FACILITY_MODEL_SEED ?? 20_261_123) },
  )

  // The sequences must have exercised the paths that matter, or agreement proves little.
  for (const label of [
    'fundJob ok', 'postCollateral ok', 'paySupplier ok', 'repay ok', 'settleJob ok', 'failJob ok', 'reclaimJob ok', 'liquidate ok', 'claimHeld ok',
    'paySupplier TooManyAdvances', 'claimHeld Error', 'claimHeld NothingHeld',
  ]) {
    t.ok((seen.get(label) ?? 0) > 0, `some ${label.replace(' ok', '')} ${label.endsWith(' ok') ? 'succeeded' : 'reverted so'} (${seen.get(label) ?? 0})`)
  }
  const reverts = [...seen.keys()].filter((label) => !label.endsWith(' ok'))
  t.ok(reverts.length >= 10, `many distinct reverts compared (${reverts.length}): ${reverts.sort().join(', ')}`)
  t.comment([...seen].sort().map(([label, n]) => `${label}: ${n}`).join('; '))
})
