// `npm run demo`: agents on the typed SDK (src/client) against a running service (`--url`, default
// http://127.0.0.1:8402) or, when nothing answers there (or with `--in-process`), against the service started in
// this process on the embedded devnet with a temporary data directory, stopped at the end.
//
// Two lender agents with different asks run the SDK's lender loop on the event stream (each lease arrives on the
// stream with its unsigned paySupplier; the loop signs it with the session key, sends and reports it). A borrower
// takes an advance against a job that its client then completes (repaid), and a second advance against a job with
// collateral that then fails and is liquidated through the recovery steps. Every on-chain step of the borrower and the
// job's client is the service's unsigned transactions. A summary table ends it. The funds come from the devnet's
// deterministic demo accounts (the lender and the borrower fund fresh agents; the job client pays the jobs), so a plain
// `npm start` works too, run after run.
// Exit code 0 when everything went as the rules say, 1 on any deviation (the message says which).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { formatUnits, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { demoAccounts } from '../chain/devnet.ts'
import { AgentCredit, ChainAgent, CreditApiError, type AdvanceView, type CreditRequestBody, type LeaseEventMessage } from '../client/index.ts'
import { startApp, type App } from '../app/app.ts'
import { loadServiceConfig } from '../app/config.ts'

const DEFAULT_URL = 'http://127.0.0.1:8402'
const USAGE = `usage: npm run demo -- [--url <base>] [--in-process]
  --url <base>    service to run the demo against (default ${DEFAULT_URL}); when nothing answers there the
                  service is started in this process on the embedded devnet with a temporary data directory
  --in-process    always start the service in this process (ignores --url)`

/** The demo's figures, in whole units of the asset. */
const RECEIVABLE_UNITS = 2000n
const ADVANCE_UNITS = 1000n
const COLLATERAL_UNITS = 300n
const MAX_FEE_UNITS = 100n
/** Each lender's liquidity: both advances, so that the cheaper one could take them both. */
const LIQUIDITY_UNITS = 2n * ADVANCE_UNITS
/** The asks (bps) of the cheaper and the dearer lender, lowered together below any cheaper lender already there. */
const CHEAP_ASK_BPS = 200
const DEAR_ASK_GAP_BPS = 100
/** Gas each fresh lender (and the fresh borrower) gets, and each lender gives its session key. */
const LENDER_GAS_WEI = 10n ** 18n
const SESSION_GAS_WEI = 10n ** 17n
const STEPS = 8

class DemoError extends Error {
  override readonly name = 'DemoError'
}

interface Options {
  url: string
  inProcess: boolean
}

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { url: DEFAULT_URL, inProcess: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(USAGE + '\n')
      process.exit(0)
    } else if (arg === '--in-process') options.inProcess = true
    else if (arg === '--url' && argv[i + 1] !== undefined) options.url = argv[++i] as string
    else if (arg.startsWith('--url=')) options.url = arg.slice('--url='.length)
    else throw new DemoError(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`)
  }
  try {
    new URL(options.url)
  } catch {
    throw new DemoError(`--url ${JSON.stringify(options.url)} is not a URL`)
  }
  options.url = options.url.replace(/\/$/, '')
  return options
}

const say = (text: string): void => {
  process.stdout.write(text + '\n')
}
const stepLine = (n: number, text: string): void => say(`[${n}/${STEPS}] ${text}`)
const note = (text: string): void => say(`      ${text}`)

/** A deviation from what the rules say must happen: the demo fails with it. */
function check(condition: boolean, deviation: string): asserts condition {
  if (!condition) throw new DemoError(deviation)
}

/** Waits for `probe` to give a value; the values come from the event stream's hooks, not from polling the service. */
async function until<T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new DemoError(`timed out after ${timeoutMs / 1000} s waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Whether anything answers HTTP at `url` (any status counts: only a connection failure or a timeout does not). */
async function answers(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/health`, { signal: AbortSignal.timeout(3000) })
    return true
  } catch {
    return false
  }
}

interface LenderAgent {
  name: string
  sdk: AgentCredit
  askBps: number
  session: ChainAgent
  paid: AdvanceView[]
  leases: string[]
  stop: () => void
}

interface Row {
  advance: string
  job: string
  lender: string
  askBps: number
  principal: bigint
  fee: bigint
  outcome: string
  toLender: bigint
  recovery: string
}

async function flow(baseUrl: string): Promise<void> {
  const keys = demoAccounts()
  const treasury = privateKeyToAccount(keys.lender.privateKey)
  const demoBorrower = privateKeyToAccount(keys.borrower.privateKey)
  // A fresh borrower each run, funded by the demo borrower: the failed job suspends the borrower's credit, and a
  // second run against the same service must start from a borrower in good standing.
  const borrowerAccount = privateKeyToAccount(generatePrivateKey())
  const clientAccount = privateKeyToAccount(keys.jobClient.privateKey)
  const borrower = new AgentCredit({ baseUrl, account: borrowerAccount })
  const jobClient = new AgentCredit({ baseUrl, account: clientAccount })

  // 1. The catalog and the supplier directory.
  const catalog = await borrower.catalog()
  const chosen = catalog.networks.find((n) => n.rpcUrl !== null && n.assets.length > 0)
  if (chosen === undefined) throw new DemoError('the catalog publishes no network with an RPC URL and an asset: the demo needs one to send transactions')
  const treasuryChain = ChainAgent.fromCatalog(chosen, treasury)
  const network = treasuryChain.network
  const asset = chosen.assets[0] as (typeof chosen.assets)[number]
  const unit = 10n ** BigInt(asset.decimals)
  const money = (atomic: bigint | string): string => `${formatUnits(BigInt(atomic), asset.decimals)} ${asset.symbol}`
  const entry = (await borrower.suppliers()).find((s) => (s.addresses[network.slug] ?? []).length > 0)
  if (entry === undefined) throw new DemoError(`the supplier directory has no supplier on ${network.slug}: configure one in CONFIG_FILE (suppliers) or PUT /suppliers/{domain} as an operator`)
  const supplier = { name: entry.name, domain: entry.domain, address: (entry.addresses[network.slug] as string[])[0] as Address }
  stepLine(
    1,
    `catalog: version ${catalog.version}, ${network.slug} (chain ${network.chainId}, credit contract ${network.creditContract}), asset ${asset.symbol} ${asset.address}; ` +
      `supplier ${supplier.name} (${supplier.domain}) ${supplier.address}; lease TTL ${catalog.limits.leaseTtlSeconds} s; ABIs and key rule in catalog.contracts; ` +
      `borrower ${borrowerAccount.address} (fresh, funded by the demo borrower)`,
  )

  const advanceAtomic = ADVANCE_UNITS * unit
  const receivableAtomic = RECEIVABLE_UNITS * unit
  const collateralAtomic = COLLATERAL_UNITS * unit
  const maxFeeAtomic = MAX_FEE_UNITS * unit
  const liquidityAtomic = LIQUIDITY_UNITS * unit
  for (const [role, address, needed] of [
    ['lender (treasury of the two lender agents)', treasury.address, 2n * liquidityAtomic],
    ['job client', clientAccount.address, 2n * receivableAtomic],
    ['borrower', demoBorrower.address, collateralAtomic],
  ] as const) {
    const held = await treasuryChain.balanceOf(asset.symbol, address)
    if (held < needed) throw new DemoError(`the demo ${role} ${address} holds ${money(held)} on ${network.slug}, needs ${money(needed)}: the demo accounts are funded only on the embedded devnet`)
  }

  const demoBorrowerChain = new ChainAgent(network, demoBorrower)
  await demoBorrowerChain.sendGas(borrowerAccount.address, LENDER_GAS_WEI)
  await demoBorrowerChain.transferToken(asset.symbol, borrowerAccount.address, collateralAtomic)

  // 2. Two lender agents, fresh wallets funded by the treasury, asks apart; each sets up its session wallet and runs
  // the SDK's lender loop on the event stream.
  const cheapest = await cheapestCompetitor(borrower, network.slug, asset.symbol, advanceAtomic)
  const cheapAsk = cheapest === undefined || cheapest > CHEAP_ASK_BPS ? CHEAP_ASK_BPS : cheapest - 1
  if (cheapAsk < 0) throw new DemoError('a registered lender with a funded wallet asks 0 bps: no demo lender can be the cheapest')
  const lenders: LenderAgent[] = []
  const deviations: string[] = []
  for (const [name, askBps] of [['lender A', cheapAsk], ['lender B', cheapAsk + DEAR_ASK_GAP_BPS]] as const) {
    const account: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey())
    await treasuryChain.sendGas(account.address, LENDER_GAS_WEI)
    await treasuryChain.transferToken(asset.symbol, account.address, liquidityAtomic)
    const sdk = new AgentCredit({ baseUrl, account })
    const registration = await sdk.registerLender({
      availableLiquidityAtomic: liquidityAtomic.toString(), asset: asset.symbol, networks: [network.slug], minFeeBps: askBps, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
    })
    if (registration.sessionKey.privateKey === null) throw new DemoError('POST /lenders/register returned no session key private key')
    const session = new ChainAgent(network, privateKeyToAccount(registration.sessionKey.privateKey as `0x${string}`))
    await sdk.setupSessionWallet(registration, new ChainAgent(network, account), session, asset.symbol, liquidityAtomic, SESSION_GAS_WEI)
    const agent: LenderAgent = { name, sdk, askBps: registration.lender.askBps, session, paid: [], leases: [], stop: () => {} }
    const loop = await sdk.runLender(session, {
      onPaid: (advance) => agent.paid.push(advance),
      onError: (error, lease: LeaseEventMessage) => deviations.push(`${name} could not pay lease ${lease.lease.leaseId}: ${error instanceof Error ? error.message : String(error)}`),
    })
    loop.stream.on((message) => {
      if (message.type === 'event' && message.kind === 'lease' && message.lease.state === 'leased') agent.leases.push(message.lease.offerId)
    })
    agent.stop = loop.stop
    lenders.push(agent)
  }
  const [lenderA, lenderB] = lenders as [LenderAgent, LenderAgent]
  await Promise.all(lenders.map((l) => spendable(l, network.slug, liquidityAtomic)))
  stepLine(
    2,
    lenders.map((l) => `${l.name} ${l.sdk.address} ask ${l.askBps} bps, session wallet ${l.session.account.address} holds ${money(liquidityAtomic)}`).join('; ') +
      '; both follow their leases on the event stream',
  )
  if (cheapAsk !== CHEAP_ASK_BPS) note(`asks lowered from ${CHEAP_ASK_BPS} bps: a registered lender with a funded wallet asks ${cheapest} bps`)

  try {
    const rows: Row[] = []
    const clientChain = new ChainAgent(network, clientAccount)
    const borrowerChain = new ChainAgent(network, borrowerAccount)
    const request = (jobId: string): CreditRequestBody => ({
      agent: borrowerAccount.address, network: network.slug, asset: asset.symbol, productType: 'job', amountAtomic: advanceAtomic.toString(),
      purpose: 'inference compute', supplier: supplier.name, supplierDomain: supplier.domain, repaymentSource: jobId, maximumFeeAtomic: maxFeeAtomic.toString(),
    })
    const dueAt = () => new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString()

    // 3. Job 1: the client escrows the receivable with the service's unsigned approve + fundJob; the borrower registers it.
    const run = Date.now()
    const job1 = `job_demo_${run}_repaid`
    const first = await borrower.fundJob(clientChain, { jobId: job1, network: network.slug, asset: asset.symbol, agent: borrowerAccount.address, receivableAtomic: receivableAtomic.toString(), dueAt: dueAt() })
    stepLine(3, `job ${job1} ${first.state}: receivable ${money(first.receivableAtomic)} escrowed by the job client ${clientAccount.address} (funding tx ${first.funding.txHash})`)

    // 4. Credit against job 1: the cheaper lender's loop takes the lease from the stream and pays the supplier.
    const supplierBefore = await treasuryChain.balanceOf(asset.symbol, supplier.address)
    const advance1 = await borrowAndWait(borrower, request(job1), lenders, lenderA)
    const supplierAfter = await treasuryChain.balanceOf(asset.symbol, supplier.address)
    check(supplierAfter - supplierBefore === advanceAtomic, `the supplier received ${money(supplierAfter - supplierBefore)}, expected ${money(advanceAtomic)}`)
    stepLine(
      4,
      `credit ${money(advanceAtomic)} for job ${job1}: lease to ${lenderA.name} (ask ${lenderA.askBps} bps, not ${lenderB.name} at ${lenderB.askBps}); its loop paid the supplier ` +
        `(tx ${advance1.payment.txHash}): advance ${advance1.advanceId} ${advance1.state}, fee ${money(advance1.feeAtomic)}`,
    )

    // 5. The client completes job 1: the escrow repays the lender first, into the session wallet that lent.
    const lenderBefore = await treasuryChain.balanceOf(asset.symbol, lenderA.session.account.address)
    const settlement = await jobClient.completeJob(job1)
    const lenderAfter = await treasuryChain.balanceOf(asset.symbol, lenderA.session.account.address)
    const repaid = await borrower.advance(advance1.advanceId)
    check(repaid.state === 'repaid', `advance ${advance1.advanceId} is ${repaid.state} after the job's completion, expected repaid`)
    check((await borrower.job(job1)).state === 'completed', `job ${job1} is not completed after completion`)
    check(lenderAfter - lenderBefore === BigInt(settlement.toLendersAtomic), `${lenderA.name} received ${money(lenderAfter - lenderBefore)}, the receipt says ${money(settlement.toLendersAtomic)}`)
    stepLine(5, `job ${job1} completed (settleJob tx ${settlement.txHash}): ${money(settlement.toLendersAtomic)} to ${lenderA.name}, ${money(settlement.toReserveAtomic)} to the reserve, ${money(settlement.toBorrowerAtomic)} to the borrower; advance repaid`)
    rows.push({ advance: advance1.advanceId, job: job1, lender: lenderA.name, askBps: lenderA.askBps, principal: BigInt(advance1.principalAtomic), fee: BigInt(advance1.feeAtomic), outcome: 'repaid', toLender: lenderAfter - lenderBefore, recovery: 'job settlement' })

    // 6. Job 2 with collateral: the borrower posts it with the service's unsigned approve + postCollateral.
    const job2 = `job_demo_${run}_failed`
    await borrower.fundJob(clientChain, { jobId: job2, network: network.slug, asset: asset.symbol, agent: borrowerAccount.address, receivableAtomic: receivableAtomic.toString(), dueAt: dueAt() })
    const collateral = await borrower.postCollateralOnChain(borrowerChain, job2, collateralAtomic)
    const advance2 = await borrowAndWait(borrower, request(job2), lenders, lenderA)
    stepLine(6, `job ${job2} funded, collateral ${money(collateral.amountAtomic)} posted by the borrower; credit ${money(advanceAtomic)}: lease to ${lenderA.name} again, advance ${advance2.advanceId} ${advance2.state}`)

    // 7. The client fails job 2 (its escrow goes back to it: a failed job earned nothing); the lender liquidates.
    const failure = await jobClient.failJob(job2, { reason: 'not_delivered' })
    const defaulted = await borrower.advance(advance2.advanceId)
    check(defaulted.state === 'defaulted', `advance ${advance2.advanceId} is ${defaulted.state} after the job failed, expected defaulted`)
    const sessionBefore = await treasuryChain.balanceOf(asset.symbol, lenderA.session.account.address)
    const liquidation = await lenderA.sdk.liquidate(advance2.advanceId)
    const sessionAfter = await treasuryChain.balanceOf(asset.symbol, lenderA.session.account.address)
    const ended = await borrower.advance(advance2.advanceId)
    // Fully recovered: liquidated; a part the recovery steps could not cover: shortfall (recorded against the lender).
    const expectedEnd = BigInt(liquidation.shortfallAtomic) === 0n ? 'liquidated' : 'shortfall'
    check(ended.state === expectedEnd, `advance ${advance2.advanceId} is ${ended.state} after liquidation, expected ${expectedEnd} (shortfall ${money(liquidation.shortfallAtomic)})`)
    check(liquidation.steps.map((s) => s.step).join() === catalog.rules.recoveryOrder.join(), `the liquidation's steps ${liquidation.steps.map((s) => s.step).join(', ')} are not the catalog's recovery order`)
    const fromCollateral = BigInt(liquidation.steps.find((s) => s.step === 'collateral')?.amountAtomic ?? '0')
    check(fromCollateral > 0n, 'the liquidation took nothing from the collateral posted for the job')
    check(
      BigInt(liquidation.recoveredAtomic) + BigInt(liquidation.shortfallAtomic) === BigInt(liquidation.owedAtomic),
      `recovered ${money(liquidation.recoveredAtomic)} + shortfall ${money(liquidation.shortfallAtomic)} is not what was owed (${money(liquidation.owedAtomic)})`,
    )
    stepLine(
      7,
      `job ${job2} failed (passport event ${failure.type}, borrower suspended); ${lenderA.name} liquidated advance ${advance2.advanceId} (tx ${liquidation.txHash}): owed ${money(liquidation.owedAtomic)}, ` +
        `${liquidation.steps.map((s) => `${s.step} ${money(s.amountAtomic)}`).join(', ')}; shortfall ${money(liquidation.shortfallAtomic)}`,
    )
    rows.push({
      advance: advance2.advanceId, job: job2, lender: lenderA.name, askBps: lenderA.askBps, principal: BigInt(advance2.principalAtomic), fee: BigInt(advance2.feeAtomic),
      outcome: ended.state, toLender: sessionAfter - sessionBefore, recovery: liquidation.steps.filter((s) => s.step !== 'shortfall' && s.amountAtomic !== '0').map((s) => s.step).join(' + ') || 'nothing',
    })

    // 8. The summary, and the deviations the loops heard.
    check(lenderB.leases.length === 0, `${lenderB.name} (the dearer ask) got leases ${lenderB.leases.join(', ')}`)
    check(lenderA.paid.length === 2, `${lenderA.name}'s loop paid ${lenderA.paid.length} leases, expected 2`)
    check(deviations.length === 0, deviations.join('; '))
    stepLine(8, 'summary')
    table(
      ['advance', 'job', 'lender (ask)', 'principal', 'fee', 'outcome', 'back to lender', 'recovered from'],
      rows.map((r) => [r.advance, r.job, `${r.lender} (${r.askBps} bps)`, money(r.principal), money(r.fee), r.outcome, money(r.toLender), r.recovery]),
    )
    table(
      ['lender', 'ask', 'leases', 'paid by its loop'],
      lenders.map((l) => [l.name, `${l.askBps} bps`, String(l.leases.length), String(l.paid.length)]),
    )
  } finally {
    for (const l of lenders) l.stop()
  }
}

/** Requests credit, matches it, and waits for the advance the expected lender's loop reports. */
async function borrowAndWait(borrower: AgentCredit, body: CreditRequestBody, lenders: LenderAgent[], expected: LenderAgent): Promise<AdvanceView> {
  const { decision, match } = await borrower.requestAndMatch(body)
  if (decision.decision !== 'approved' || decision.offer === null) throw new DemoError(`credit for ${body.repaymentSource} ${decision.decision}: ${decision.reasons.map((r) => r.code).join(', ')}`)
  const offerId = decision.offer.offerId
  if (match?.lease == null) throw new DemoError(`no lender could take offer ${offerId} now (lease: null)`)
  const winner = lenders.find((l) => l.sdk.address === match.lease?.lender)
  check(winner === expected, `offer ${offerId} was leased to ${winner?.name ?? match.lease.lender}, expected ${expected.name}, the cheapest ask`)
  return until(`${expected.name}'s loop to pay offer ${offerId}`, 30_000, () => expected.paid.find((a) => a.offerId === offerId))
}

/** Waits until the service's watcher sees the lender's session wallet hold `atomic` (the lender enters the books then). */
async function spendable(lender: LenderAgent, slug: string, atomic: bigint): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const wallet = await lender.sdk.wallet(lender.sdk.address)
    const holding = wallet.holdings.find((h) => h.network === slug)
    if (holding !== undefined && BigInt(holding.spendableAtomic) >= atomic) return
    if (Date.now() > deadline) throw new DemoError(`timed out waiting for ${lender.name}'s session wallet to be seen funded`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * The lowest ask of registered lenders that could win a match here (same network, a wallet holding the amount): on
 * a shared service the demo's asks go below it so that the lease goes to a lender whose key the demo holds.
 */
async function cheapestCompetitor(sdk: AgentCredit, slug: string, symbol: string, amountAtomic: bigint): Promise<number | undefined> {
  let cheapest: number | undefined
  for await (const l of sdk.lenders()) {
    if (!l.networks.includes(slug) || BigInt(l.availableAtomic) < amountAtomic) continue
    const holding = (await sdk.wallet(l.address as Address)).holdings.find((h) => h.network === slug && h.asset === symbol)
    if (holding !== undefined && BigInt(holding.spendableAtomic) >= amountAtomic) cheapest = Math.min(cheapest ?? l.askBps, l.askBps)
  }
  return cheapest
}

function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`
  say(line(header))
  say(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`)
  for (const r of rows) say(line(r))
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2))
  let app: App | undefined
  let dataDir: string | undefined
  let baseUrl = options.url
  if (options.inProcess || !(await answers(options.url))) {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-credit-demo-'))
    say(
      options.inProcess
        ? 'starting the service in this process (--in-process) on the embedded devnet'
        : `nothing answers at ${options.url}: starting the service in this process on the embedded devnet`,
    )
    app = await startApp(loadServiceConfig({}, { port: 0, dataDir, requestLog: false }))
    baseUrl = app.url
    say(`service listening on ${baseUrl} (temporary data directory ${dataDir}); it stops at the end of the demo`)
  } else {
    say(`running the demo against ${baseUrl}`)
  }
  const started = Date.now()
  try {
    await flow(baseUrl)
    say(`demo complete in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    return 0
  } finally {
    if (app !== undefined) {
      await app.stop()
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
      say('stopped the in-process service and its devnet, removed the temporary data directory')
    }
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof DemoError || error instanceof CreditApiError ? error.message : error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    process.stderr.write(`demo failed: ${message}\n`)
    process.exit(1)
  },
)
