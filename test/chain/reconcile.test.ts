// Reconciliation against CreditFacilityV2 on anvil: a sequence of real calls (fund, collateral, pay, partial repay,
// settle, fail, liquidate, a backing advance), mirrored on the contract's TypeScript model; the model's expected state
// must reconcile with no difference, and each planted difference must be found and named precisely: a ledger that is
// wrong (an escrow, an owed amount, a status, a total, an advance the chain never saw), a token sent to the contract
// outside its functions (conservation), and an advance paid on chain that the ledger never recorded (issue 9, case 1).
import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { erc20Abi, getAddress, zeroHash, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { FacilityModel, type ModelEvent, type ModelOutcome } from '../../src/chain/facility-model.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import type { LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { ascendingKeys } from '../../src/chain/operator.ts'
import {
  expectedFromModel,
  ExpectedStateError,
  expectedStateToJson,
  parseExpectedState,
  reconcile,
  type Difference,
  type ExpectedNetworkState,
} from '../../src/chain/reconcile.ts'
import { setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'

const execFileAsync = promisify(execFile)
// A path, not a URL's pathname: that one is percent-encoded (a checkout under `ü $x (1)` gave spawn ENOENT).
const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
/** `npm run reconcile` without npm's start-up: the same file, under the tests' loader (test/fixtures/ts-loader.ts). */
const command = [...TS_LOADER_ARGS, 'src/tools/reconcile.ts', '--timeout-ms', '20000']

let f: V2Fixture
let model: FacilityModel
const modelEvents: ModelEvent[] = []
const salt = newKeySalt()
let sequence = 0
const nextJobKey = () => jobKeyOf(`job_reconcile_${++sequence}`)
const nextOfferKey = () => offerKeyOf(salt, `off_reconcile_${++sequence}`)
const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address

/** A wallet on chain and in the model alike. */
async function wallet(tokens: bigint): Promise<Wallet> {
  const w = await f.wallet(tokens)
  model.setBalance(f.token, w.account.address, tokens)
  model.setAllowance(f.token, w.account.address, f.facility, tokens)
  return w
}

/** Sends the call on chain, then applies it to the model at the same block time; both must succeed. */
async function both(who: Wallet, functionName: string, args: readonly unknown[], onModel: (ctx: { sender: Address; nowSeconds: bigint }) => ModelOutcome) {
  const hash = await f.call(who, functionName, args)
  const receipt = await f.publicClient.getTransactionReceipt({ hash })
  const block = await f.publicClient.getBlock({ blockNumber: receipt.blockNumber })
  const outcome = onModel({ sender: who.account.address, nowSeconds: block.timestamp })
  if (!outcome.ok) throw new Error(`the model refused ${functionName}: ${outcome.error}`)
  modelEvents.push(...outcome.events)
}

/** A job funded by a fresh client for a fresh borrower, with collateral posted. */
async function openJob(escrow: bigint, collateral: bigint): Promise<Hex> {
  const client = await wallet(escrow)
  const borrower = await wallet(100n * USDC)
  const jobKey = nextJobKey()
  await both(client, 'fundJob', [jobKey, f.token, escrow, borrower.account.address], (ctx) => model.fundJob(ctx, jobKey, f.token, escrow, borrower.account.address))
  await both(borrower, 'postCollateral', [jobKey, f.token, collateral], (ctx) => model.postCollateral(ctx, jobKey, f.token, collateral))
  return jobKey
}

async function terms(payer: Wallet, jobKey: Hex, amount: bigint, fee: bigint, reserveShare: bigint): Promise<LeaseAuthorization> {
  const now = await f.chainNow()
  return {
    offerKey: nextOfferKey(), jobKey, payer: payer.account.address, supplier: freshAddress(), asset: f.token,
    amount, fee, reserveShare, deadline: now + 600n, dueAt: now + 3_600n,
  }
}

async function pay(lender: Wallet, a: LeaseAuthorization): Promise<Hex> {
  await both(lender, 'paySupplier', [a, f.authorize(a)], (ctx) => model.paySupplier(ctx, a, { recovered: f.signer.address }))
  return a.offerKey
}

async function head(): Promise<bigint> {
  return f.publicClient.getBlockNumber({ cacheTime: 0 })
}

/** The network's client as the service builds it (no retries), with a deadline a loaded shared machine cannot miss:
 * tests must not depend on wall-clock speed (the default 750 ms one is the service's). */
const testTimeoutMs = 20_000
const reconcileOptions = () => ({ publicClient: createNetworkClients(f.network, { timeoutMs: testTimeoutMs }).publicClient })

const byKindAndKey = (a: Difference, b: Difference) => `${a.kind}:${a.key}`.localeCompare(`${b.kind}:${b.key}`)

let expected: ExpectedNetworkState
const keys: Record<string, Hex> = {}

t.before(async () => {
  f = await setupFacilityV2(t)
  model = new FacilityModel({ address: f.facility, operator: f.operator.account.address, leaseSigner: f.signer.address, reclaimDelay: devnetReclaimDelaySeconds })
  const operator = f.operator
  const lender = await wallet(10_000n * USDC)
  const repayer = await wallet(1_000n * USDC)

  // Job A: advanced twice, one partly repaid, then settled from its escrow (lenders, reserve, the rest to the borrower).
  keys.jobA = await openJob(500n * USDC, 50n * USDC)
  keys.a1 = await pay(lender, await terms(lender, keys.jobA, 100n * USDC, 10n * USDC, 1n * USDC))
  await both(repayer, 'repay', [keys.a1, 40n * USDC], (ctx) => model.repay(ctx, keys.a1 as Hex, 40n * USDC))
  keys.a2 = await pay(lender, await terms(lender, keys.jobA, 50n * USDC, 5n * USDC, 1n * USDC))
  const settled = ascendingKeys([keys.a1 as Hex, keys.a2 as Hex])
  await both(operator, 'settleJob', [keys.jobA, settled], (ctx) => model.settleJob(ctx, keys.jobA as Hex, settled))

  // Job B: advanced, failed (escrow back to the client), liquidated from collateral and the reserve, with a shortfall.
  keys.jobB = await openJob(200n * USDC, 10n * USDC)
  keys.b1 = await pay(lender, await terms(lender, keys.jobB, 40n * USDC, 4n * USDC, 1n * USDC))
  await both(operator, 'failJob', [keys.jobB], (ctx) => model.failJob(ctx, keys.jobB as Hex))
  await both(operator, 'liquidate', [keys.b1, 0n], (ctx) => model.liquidate(ctx, keys.b1 as Hex, 0n))

  // Job C stays open with a partly repaid advance; D is an advance on a backing source (no job).
  keys.jobC = await openJob(300n * USDC, 20n * USDC)
  keys.c1 = await pay(lender, await terms(lender, keys.jobC, 60n * USDC, 6n * USDC, 1n * USDC))
  await both(repayer, 'repay', [keys.c1, 10n * USDC], (ctx) => model.repay(ctx, keys.c1 as Hex, 10n * USDC))
  keys.d1 = await pay(lender, await terms(lender, zeroHash, 30n * USDC, 3n * USDC, 0n))

  expected = expectedFromModel(model, { network: f.network.slug, fromBlock: 0n, toBlock: await head(), events: modelEvents })
})

t.test('a ledger that followed every call reconciles with no difference', async (t) => {
  const report = await reconcile(expected, reconcileOptions())
  t.strictSame(report.differences, [], 'no difference')
  // Not vacuous: the chain's side was read and holds what the sequence did.
  const chain = report.actual.assets.get(getAddress(f.token))
  t.ok(chain, 'the asset was read')
  t.equal(chain?.totals.suppliersPaidAtomic, 280n * USDC, 'four principals paid to suppliers')
  t.equal(chain?.totals.repaidToLendersAtomic, 50n * USDC, 'two partial repayments')
  t.equal(chain?.totals.escrowRefundedAtomic, 200n * USDC, 'the failed job\'s escrow back to its client')
  t.equal(chain?.totals.liquidatedFromCollateralAtomic, 10n * USDC, 'the failed job\'s collateral to its lender')
  t.ok((chain?.totals.liquidationShortfallAtomic ?? 0n) > 0n, 'a shortfall was left')
  t.equal(chain?.contractBalanceAtomic, 320n * USDC + (chain?.reserveAtomic ?? 0n), 'job C\'s escrow and collateral + the reserve')
  t.equal(report.actual.jobs.size, 3)
  t.equal(report.actual.advances.size, 5)
})

t.test('a ledger that differs from the chain: each difference is named', async (t) => {
  const asset = getAddress(f.token)
  const [state] = expected.assets
  if (state === undefined) throw new Error('no asset state')
  const ghost = nextOfferKey()
  const jobC = state.jobs.get(keys.jobC as Hex)
  const c1 = state.advances.get(keys.c1 as Hex)
  const jobB = state.jobs.get(keys.jobB as Hex)
  if (jobC === undefined || c1 === undefined || jobB === undefined) throw new Error('the model lost a key')
  const altered: ExpectedNetworkState = {
    ...expected,
    assets: [
      {
        ...state,
        jobs: new Map([...state.jobs, [keys.jobC as Hex, { ...jobC, escrowAtomic: jobC.escrowAtomic + 1n }], [keys.jobB as Hex, { ...jobB, status: 'failed' as const }]]),
        advances: new Map([
          ...state.advances,
          [keys.c1 as Hex, { ...c1, lenderOwedAtomic: c1.lenderOwedAtomic - 5n }],
          [ghost, { lenderOwedAtomic: 7n, reserveOwedAtomic: 0n, liquidated: false }],
        ]),
        reserveAtomic: state.reserveAtomic + 2n,
        totals: { ...state.totals, repaidToLendersAtomic: (state.totals.repaidToLendersAtomic ?? 0n) + 3n },
      },
    ],
  }
  const report = await reconcile(altered, reconcileOptions())
  const network = f.network.slug
  t.strictSame(
    [...report.differences].sort(byKindAndKey),
    [
      { network, asset, kind: 'advance_lender_owed', key: keys.c1, expected: (c1.lenderOwedAtomic - 5n).toString(), actual: c1.lenderOwedAtomic.toString() },
      { network, asset, kind: 'advance_missing', key: ghost, expected: { lenderOwedAtomic: '7', reserveOwedAtomic: '0', liquidated: false }, actual: null },
      { network, asset, kind: 'job_escrow', key: keys.jobC, expected: (jobC.escrowAtomic + 1n).toString(), actual: jobC.escrowAtomic.toString() },
      // Closed on chain: the last liquidation resolved the failed job and released what was left of its collateral.
      { network, asset, kind: 'job_status', key: keys.jobB, expected: 'failed', actual: 'closed' },
      { network, asset, kind: 'reserve', key: asset, expected: (state.reserveAtomic + 2n).toString(), actual: state.reserveAtomic.toString() },
      { network, asset, kind: 'total', key: 'repaidToLendersAtomic', expected: (50n * USDC + 3n).toString(), actual: (50n * USDC).toString() },
    ].sort((a, b) => `${a.kind}:${a.key}`.localeCompare(`${b.kind}:${b.key}`)),
    'exactly the planted differences, each with its key and both values',
  )
})

t.test('tokens sent to the contract outside its functions break token conservation', async (t) => {
  const sender = await f.wallet(7n * USDC)
  const hash = await sender.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'transfer', args: [f.facility, 7n * USDC] })
  await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  const later: ExpectedNetworkState = { ...expected, toBlock: await head() }
  const report = await reconcile(later, reconcileOptions())
  const chain = report.actual.assets.get(getAddress(f.token))
  const held = 320n * USDC + (chain?.reserveAtomic ?? 0n)
  t.strictSame(report.differences, [
    { network: f.network.slug, asset: getAddress(f.token), kind: 'token_conservation', key: getAddress(f.facility), expected: held.toString(), actual: (held + 7n * USDC).toString() },
  ])

  t.test('the command prints the same difference as JSON', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'reconcile-'))
    const file = join(dir, 'expected.json')
    writeFileSync(file, JSON.stringify(expectedStateToJson(later)))
    const args = [...command, '--rpc-url', f.network.rpcUrl, '--contract', f.facility, '--expected', file]
    const run = await execFileAsync(process.execPath, args, { cwd: repoRoot }).then(
      (ok) => ({ code: 0, stdout: ok.stdout, stderr: ok.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    )
    t.equal(run.code, 1, `exit code 1 when there is a difference (${run.stderr})`)
    const printed = JSON.parse(run.stdout) as { toBlock: string; differences: Difference[] }
    t.equal(printed.toBlock, later.toBlock.toString())
    t.strictSame(printed.differences, report.differences)

    const bareArgs = [...command, '--rpc-url', f.network.rpcUrl, '--contract', f.facility, '--network', f.network.slug, '--job', keys.jobC as Hex, '--to', later.toBlock.toString()]
    const bare = await execFileAsync(process.execPath, bareArgs, { cwd: repoRoot }).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    )
    t.equal(bare.code, 1, `without a ledger, conservation alone is checked, and found broken (${bare.stderr})`)
    t.strictSame((JSON.parse(bare.stdout) as { differences: Difference[] }).differences, report.differences)
  })
})

t.test('an advance paid on chain that the ledger never recorded is found', async (t) => {
  const lender = await f.wallet(1_000n * USDC)
  const now = await f.chainNow()
  const a: LeaseAuthorization = {
    offerKey: nextOfferKey(), jobKey: keys.jobC as Hex, payer: lender.account.address, supplier: freshAddress(), asset: f.token,
    amount: 25n * USDC, fee: 2n * USDC, reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n,
  }
  // Paid on chain only: the ledger (the model) never hears of it.
  await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  const later: ExpectedNetworkState = { ...expected, toBlock: await head() }
  const report = await reconcile(later, reconcileOptions())
  const network = f.network.slug
  const asset = getAddress(f.token)
  const differences = report.differences.filter((d) => d.kind !== 'token_conservation')
  t.strictSame(differences.sort(byKindAndKey), [
    { network, asset, kind: 'advance_unexpected', key: a.offerKey, expected: null, actual: { lenderOwedAtomic: (26n * USDC).toString(), reserveOwedAtomic: (1n * USDC).toString(), liquidated: false } },
    { network, asset, kind: 'total', key: 'suppliersPaidAtomic', expected: (280n * USDC).toString(), actual: (305n * USDC).toString() },
  ])

  // State and events are read as of the ledger's block: what happened after it (the transfer, this advance) is no
  // difference for a ledger that is behind, only for one that claims to be at the head.
  t.strictSame((await reconcile(expected, reconcileOptions())).differences, [], 'the earlier ledger still reconciles at its own block')
})

t.test('the JSON form of a ledger round-trips, and a bad one is refused with every problem named', async (t) => {
  t.strictSame(parseExpectedState(JSON.parse(JSON.stringify(expectedStateToJson(expected)))), expected, 'parse(toJson(x)) == x')
  const json = expectedStateToJson(expected) as unknown as { fromBlock: string; assets: { reserveAtomic: string; totals: Record<string, string> }[] }
  const bad = { ...json, fromBlock: '-1', assets: [{ ...json.assets[0], reserveAtomic: '1.5', totals: { ...json.assets[0]?.totals, extra: '1' } }] }
  t.throws(() => parseExpectedState(bad), ExpectedStateError)
  try {
    parseExpectedState(bad)
  } catch (error) {
    const paths = (error as ExpectedStateError).problems.map((p) => p.path)
    for (const path of ['/fromBlock', '/assets/0/reserveAtomic', '/assets/0/totals']) t.ok(paths.includes(path), `names ${path}`)
  }
  t.throws(() => parseExpectedState({ ...json, fromBlock: '9', toBlock: '8' }), { name: 'ExpectedStateError', message: /fromBlock/ })
})
