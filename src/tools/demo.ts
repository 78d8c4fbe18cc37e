// `npm run demo`: the typical flow of spec section 4, step by step, against a running service (`--url`, default
// http://127.0.0.1:8402) or, when nothing answers there (or with `--in-process`), against the service started in
// this process on the embedded devnet with a temporary data directory, stopped at the end. The agents are the
// devnet's deterministic demo accounts (lender, borrower, job client, supplier), so a plain `npm start` works too.
// One line per step: what was called, the status, the key fields. Exit code 0 on success, 1 on any surprise.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { formatUnits, type Address, type Hash } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { demoAccounts } from '../chain/devnet.ts'
import { ChainAgent, type WireTransaction } from '../client/chain.ts'
import { CreditClient, type Reply } from '../client/client.ts'
import { startApp, type App } from '../app/app.ts'
import { loadServiceConfig } from '../app/config.ts'

const DEFAULT_URL = 'http://127.0.0.1:8402'
const USAGE = `usage: npm run demo -- [--url <base>] [--in-process]
  --url <base>    service to run the flow against (default ${DEFAULT_URL}); when nothing answers there the
                  service is started in this process on the embedded devnet with a temporary data directory
  --in-process    always start the service in this process (ignores --url)`

/** The flow's figures, in whole units of the asset: the job's receivable, the advance, the borrower's maximum fee. */
const RECEIVABLE_UNITS = 2000n
const ADVANCE_UNITS = 1000n
const MAX_FEE_UNITS = 100n
const ASK_BPS = 250
/** Gas the lender gives its session key (setup approve + paySupplier), and a fresh lender gets from the demo lender. */
const SESSION_GAS_WEI = 10n ** 17n
const FRESH_LENDER_GAS_WEI = 10n ** 18n

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
const stepLine = (n: number, text: string): void => say(`[${n}/7] ${text}`)
const note = (text: string): void => say(`      ${text}`)

/** Throws a DemoError naming the call, the status and the problem's code and detail when the status is not `expected`. */
function expect<T>(reply: Reply<T>, expected: number, call: string): T {
  if (reply.status !== expected) {
    const body = reply.body as { code?: string; detail?: string } | string
    const problem = typeof body === 'object' && body !== null ? `${body.code ?? ''} ${body.detail ?? JSON.stringify(body)}`.trim() : String(body).slice(0, 300)
    throw new DemoError(`${call}: expected ${expected}, got ${reply.status}${problem ? `: ${problem}` : ''}`)
  }
  return reply.body
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new DemoError(`timed out after ${timeoutMs / 1000} s waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
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

interface CatalogNetwork {
  slug: string
  caip2: `eip155:${number}`
  chainId: number
  rpcUrl: string | null
  confirmations: number
  creditContract: Address
  identityRegistry: Address
  reputationRegistry: Address
  assets: { symbol: string; address: Address; decimals: number; eip712Name: string; eip712Version: string }[]
}

interface Catalog {
  version: string
  networks: CatalogNetwork[]
  suppliers: { directory: string }
  limits: { leaseTtlSeconds: number }
}

async function flow(baseUrl: string): Promise<void> {
  const keys = demoAccounts()
  const demoLender = privateKeyToAccount(keys.lender.privateKey)
  const borrower = privateKeyToAccount(keys.borrower.privateKey)
  const jobClient = privateKeyToAccount(keys.jobClient.privateKey)

  // 1. The catalog: network, asset, supplier.
  const publicApi = new CreditClient(baseUrl)
  const catalog = expect(await publicApi.get<Catalog>('/.well-known/service.json'), 200, 'GET /.well-known/service.json')
  const chosen = catalog.networks.find((n) => n.rpcUrl !== null && n.assets.length > 0)
  if (chosen === undefined) throw new DemoError('the catalog publishes no network with an RPC URL and an asset: the demo needs one to send transactions')
  const network = ChainAgent.fromCatalog(chosen, demoLender).network
  const asset = chosen.assets[0] as CatalogNetwork['assets'][number]
  const unit = 10n ** BigInt(asset.decimals)
  const money = (atomic: bigint | string): string => `${formatUnits(BigInt(atomic), asset.decimals)} ${asset.symbol}`
  // The supplier directory (the catalog names its route): the first domain with an address on the network.
  const directory = expect(await publicApi.get<{ domain: string; name: string; addresses: Record<string, Address[]> }[]>(catalog.suppliers.directory), 200, `GET ${catalog.suppliers.directory}`)
  const entry = directory.find((s) => (s.addresses[network.slug] ?? []).length > 0)
  if (entry === undefined) throw new DemoError(`the supplier directory has no supplier on ${network.slug}: configure one in CONFIG_FILE (suppliers) or PUT /suppliers/{domain} as an operator`)
  const supplier = { name: entry.name, domain: entry.domain, address: (entry.addresses[network.slug] as Address[])[0] as Address }
  stepLine(
    1,
    `GET /.well-known/service.json -> 200: version ${catalog.version}, networks ${catalog.networks.map((n) => n.slug).join(', ')}; ` +
      `using ${network.slug} (chain ${network.chainId}, credit contract ${network.creditContract}), asset ${asset.symbol} ${asset.address}; ` +
      `supplier ${supplier.name} (${supplier.domain}) ${supplier.address}; lease TTL ${catalog.limits.leaseTtlSeconds} s`,
  )

  const advanceAtomic = ADVANCE_UNITS * unit
  const receivableAtomic = RECEIVABLE_UNITS * unit
  const maxFeeAtomic = MAX_FEE_UNITS * unit
  const demoLenderChain = new ChainAgent(network, demoLender)
  const jobClientChain = new ChainAgent(network, jobClient)
  const readChain = demoLenderChain
  for (const [role, address, needed] of [
    ['lender', demoLender.address, advanceAtomic],
    ['job client', jobClient.address, receivableAtomic],
  ] as const) {
    const held = await readChain.balanceOf(asset.symbol, address)
    if (held < needed) {
      throw new DemoError(
        `the demo ${role} ${address} holds ${money(held)} on ${network.slug}, needs ${money(needed)}: the demo accounts are funded only on the embedded devnet`,
      )
    }
  }

  // 2. The lender: register, fund the session key, send the setup transaction, wait for the watcher.
  let ask = ASK_BPS
  const competitors = await cheaperCompetitors(publicApi, network.slug, asset.symbol, ask, advanceAtomic)
  if (competitors.length > 0) {
    const cheapest = Math.min(...competitors.map((c) => c.askBps))
    if (cheapest === 0) throw new DemoError(`lender ${competitors[0]?.address} asks 0 bps with a funded wallet: the demo lender cannot be the cheapest`)
    ask = cheapest - 1
  }
  const registration = {
    availableLiquidityAtomic: advanceAtomic.toString(),
    asset: asset.symbol,
    networks: [network.slug],
    minFeeBps: ask,
    maxDurationSeconds: 30 * 24 * 3600,
    acceptedRiskBands: ['A', 'B', 'C'],
  }
  let lender: PrivateKeyAccount = demoLender
  let lenderApi = new CreditClient(baseUrl)
  await lenderApi.signIn(lender)
  let registered = await lenderApi.post('/lenders/register', registration)
  let freshNote = ''
  if (registered.status === 409 && (registered.body as { code?: string }).code === 'lender_exists') {
    // The demo lender registers once per data directory, and its session key was shown once: a fresh lender it funds.
    lender = privateKeyToAccount(generatePrivateKey())
    const gasTx = await demoLenderChain.sendGas(lender.address, FRESH_LENDER_GAS_WEI)
    const tokenTx = await demoLenderChain.transferToken(asset.symbol, lender.address, advanceAtomic)
    freshNote =
      `the demo lender ${demoLender.address} is already registered here (409 lender_exists): using a fresh lender ${lender.address}, ` +
      `funded from the demo lender's wallet with ${formatUnits(FRESH_LENDER_GAS_WEI, 18)} ETH (tx ${gasTx}) and ${money(advanceAtomic)} (tx ${tokenTx})`
    lenderApi = new CreditClient(baseUrl)
    await lenderApi.signIn(lender)
    registered = await lenderApi.post('/lenders/register', registration)
  }
  const reg = expect(registered, 201, `POST /lenders/register (${lender.address})`) as {
    lender: { address: Address; askBps: number }
    sessionKey: { address: Address; privateKey: `0x${string}` | null }
    setupTransactions: (WireTransaction & { network: string })[]
  }
  if (reg.sessionKey.privateKey === null) throw new DemoError('POST /lenders/register returned no session key private key')
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  const lenderChain = new ChainAgent(network, lender)
  const gasTx = await lenderChain.sendGas(session.address, SESSION_GAS_WEI)
  const fundTx = await lenderChain.transferToken(asset.symbol, session.address, advanceAtomic)
  const sessionChain = new ChainAgent(network, session)
  const setupTxs: Hash[] = []
  for (const tx of reg.setupTransactions) if (tx.network === network.slug) setupTxs.push(await sessionChain.sendUnsigned(tx))
  const walletPath = `/lenders/${lender.address}/wallet`
  let walletStatus = 0
  const spendable = await until(`${walletPath} to show ${money(advanceAtomic)} spendable`, 15_000, async () => {
    const reply = await publicApi.get<{ holdings: { network: string; spendableAtomic: string }[] }>(walletPath)
    expect(reply, 200, `GET ${walletPath}`)
    walletStatus = reply.status
    const holding = reply.body.holdings.find((h) => h.network === network.slug)
    return holding !== undefined && BigInt(holding.spendableAtomic) >= advanceAtomic ? holding.spendableAtomic : undefined
  })
  stepLine(
    2,
    `POST /lenders/register -> 201: lender ${lender.address} ask ${reg.lender.askBps} bps, liquidity ${money(advanceAtomic)}, session key ${session.address}; ` +
      `funded it with ${formatUnits(SESSION_GAS_WEI, 18)} ETH (tx ${gasTx}) and ${money(advanceAtomic)} (tx ${fundTx}); setup approve tx ${setupTxs.join(', ')}; ` +
      `GET ${walletPath} -> ${walletStatus}: spendable ${money(spendable)}`,
  )
  if (freshNote) note(freshNote)
  if (ask !== ASK_BPS) note(`ask lowered from ${ASK_BPS} to ${ask} bps: ${competitors.length} registered lender(s) with a funded wallet ask ${ASK_BPS} bps or less`)

  // 3. The job: the job client escrows the receivable for the borrower on chain, the borrower registers it.
  const jobId = `job_demo_${Date.now()}`
  const fundingTx = await jobClientChain.fundJob(jobId, asset.symbol, receivableAtomic, borrower.address)
  const borrowerApi = new CreditClient(baseUrl)
  await borrowerApi.signIn(borrower)
  const job = expect(
    await borrowerApi.post('/credit/jobs', {
      jobId,
      network: network.slug,
      asset: asset.symbol,
      agent: borrower.address,
      receivableAtomic: receivableAtomic.toString(),
      dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(),
      fundingTxHash: fundingTx,
    }),
    201,
    'POST /credit/jobs',
  ) as { state: string; dueAt: string }
  stepLine(
    3,
    `fundJob by job client ${jobClient.address}: tx ${fundingTx}; POST /credit/jobs -> 201: job ${jobId} ${job.state}, ` +
      `receivable ${money(receivableAtomic)}, borrower ${borrower.address}, due ${job.dueAt}`,
  )

  // 4. The credit request.
  const decision = expect(
    await borrowerApi.post('/credit/request', {
      agent: borrower.address,
      network: network.slug,
      asset: asset.symbol,
      productType: 'job',
      amountAtomic: advanceAtomic.toString(),
      purpose: 'inference compute',
      supplier: supplier.name,
      supplierDomain: supplier.domain,
      repaymentSource: jobId,
      maximumFeeAtomic: maxFeeAtomic.toString(),
    }),
    200,
    'POST /credit/request',
  ) as { decision: string; reasons: { code: string }[]; riskBand: string; capacityAtomic: string; offer: { offerId: string; supplierAddress?: string } | null }
  if (decision.decision !== 'approved' || decision.offer === null) {
    throw new DemoError(`POST /credit/request -> 200 but ${decision.decision}: ${decision.reasons.map((r) => r.code).join(', ')}`)
  }
  const offerId = decision.offer.offerId
  stepLine(
    4,
    `POST /credit/request -> 200: approved, offer ${offerId}, ${money(advanceAtomic)} to ${supplier.domain}, max fee ${money(maxFeeAtomic)}, ` +
      `risk band ${decision.riskBand}, capacity ${money(decision.capacityAtomic)}`,
  )

  // 5. The match.
  const match = expect(await borrowerApi.post('/credit/match', { offerId }), 200, 'POST /credit/match') as {
    lease: { leaseId: string; lender: Address; feeAtomic: string; expiresAt: string } | null
    refusedLeases: { lender: Address; endReason: string | null }[]
  }
  if (match.lease === null) throw new DemoError(`POST /credit/match -> 200 but no lender could take offer ${offerId} now (lease: null)`)
  if (match.lease.lender !== lender.address) {
    throw new DemoError(`POST /credit/match selected lender ${match.lease.lender}, not the demo's lender ${lender.address}: the demo can sign only for its own lender`)
  }
  stepLine(
    5,
    `POST /credit/match -> 200: selected lender ${match.lease.lender} (ask ${reg.lender.askBps} bps), fee ${money(match.lease.feeAtomic)}, ` +
      `lease ${match.lease.leaseId} expires ${match.lease.expiresAt}`,
  )
  if (match.refusedLeases.length > 0) {
    note(`passed over first: ${match.refusedLeases.map((l) => `${l.lender} (${l.endReason ?? 'refused'})`).join(', ')}`)
  }

  // 6. The lender polls its actions, signs the paySupplier with the session key, sends and reports it.
  const actionsPath = `/lenders/${lender.address}/actions`
  const action = await until(`${actionsPath} to list offer ${offerId}`, 10_000, async () => {
    const reply = await lenderApi.get<{ kind: string; lease: { offerId: string }; authorization: { deadline: string }; transaction: WireTransaction }[]>(actionsPath)
    // Wallet actions (top_up, approve, withdraw) follow the leases to pay and carry no lease.
    return expect(reply, 200, `GET ${actionsPath}`).find((a) => a.kind === 'pay_supplier' && a.lease.offerId === offerId)
  })
  const supplierBefore = await readChain.balanceOf(asset.symbol, supplier.address)
  const paid = await sessionChain.sendUnsigned(action.transaction)
  const advance = expect(
    await lenderApi.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.address, supplierPaymentId: paid }),
    200,
    `POST /credit/offers/${offerId}/supplier-payment`,
  ) as { advanceId: string; state: string; principalAtomic: string; feeAtomic: string }
  const supplierAfter = await readChain.balanceOf(asset.symbol, supplier.address)
  stepLine(
    6,
    `GET ${actionsPath} -> 200: pay_supplier, signed deadline ${new Date(Number(action.authorization.deadline) * 1000).toISOString()}; paySupplier tx ${paid} signed by session key ${session.address}; ` +
      `POST /credit/offers/${offerId}/supplier-payment -> 200: advance ${advance.advanceId} ${advance.state}, principal ${money(advance.principalAtomic)}, fee ${money(advance.feeAtomic)}; ` +
      `supplier ${supplier.address} ${money(supplierBefore)} -> ${money(supplierAfter)} (+${money(supplierAfter - supplierBefore)})`,
  )
  if (supplierAfter - supplierBefore !== advanceAtomic) throw new DemoError(`the supplier received ${money(supplierAfter - supplierBefore)}, expected ${money(advanceAtomic)}`)

  // 7. The job client completes the job: the escrow repays the lender first, into the session wallet that lent
  // (the advance's lender on chain is the paying wallet: capital recycles into the wallet that lends).
  const jobClientApi = new CreditClient(baseUrl)
  await jobClientApi.signIn(jobClient)
  const lenderBefore = await readChain.balanceOf(asset.symbol, session.address)
  const receipt = expect(await jobClientApi.post(`/credit/jobs/${jobId}/complete`, {}), 200, `POST /credit/jobs/${jobId}/complete`) as {
    txHash: Hash
    toLendersAtomic: string
    toReserveAtomic: string
    toBorrowerAtomic: string
  }
  const lenderAfter = await readChain.balanceOf(asset.symbol, session.address)
  const final = expect(await publicApi.get<{ state: string }>(`/credit/jobs/${jobId}`), 200, `GET /credit/jobs/${jobId}`)
  const finalAdvance = expect(await publicApi.get<{ state: string }>(`/credit/advances/${advance.advanceId}`), 200, `GET /credit/advances/${advance.advanceId}`)
  stepLine(
    7,
    `POST /credit/jobs/${jobId}/complete -> 200: settleJob tx ${receipt.txHash}; to lenders ${money(receipt.toLendersAtomic)}, ` +
      `to insurance reserve ${money(receipt.toReserveAtomic)}, to borrower ${money(receipt.toBorrowerAtomic)}; ` +
      `lender's session wallet ${session.address} ${money(lenderBefore)} -> ${money(lenderAfter)} (+${money(lenderAfter - lenderBefore)}); ` +
      `job ${jobId} ${final.state}, advance ${advance.advanceId} ${finalAdvance.state}`,
  )
  if (final.state !== 'completed') throw new DemoError(`job ${jobId} is ${final.state} after completion, expected completed`)
  if (lenderAfter - lenderBefore !== BigInt(receipt.toLendersAtomic)) {
    throw new DemoError(`the lender received ${money(lenderAfter - lenderBefore)}, the receipt says ${money(receipt.toLendersAtomic)}`)
  }
}

/**
 * Registered lenders other than ours that could win the match at our ask or below (same network, a wallet holding
 * the amount): on a shared service the demo undercuts them so that the lease goes to the lender whose key it holds.
 * Approximate (reliability, risk bands and live leases are not checked); the match step checks the real outcome.
 */
async function cheaperCompetitors(api: CreditClient, slug: string, symbol: string, askBps: number, amountAtomic: bigint) {
  const lenders = expect(await api.list<{ address: Address; askBps: number; networks: string[]; availableAtomic: string }>('/lenders?limit=1000'), 200, 'GET /lenders')
  const candidates = lenders.filter((l) => l.askBps <= askBps && l.networks.includes(slug) && BigInt(l.availableAtomic) >= amountAtomic)
  if (candidates.length === 0) return []
  const wallets = expect(
    await api.list<{ lender: Address; holdings: { network: string; asset: string; spendableAtomic: string }[] }>('/lenders/wallets?limit=200'),
    200,
    'GET /lenders/wallets',
  )
  const spendable = new Map(wallets.map((w) => [w.lender, w.holdings.find((h) => h.network === slug && h.asset === symbol)?.spendableAtomic ?? '0']))
  return candidates.filter((l) => BigInt(spendable.get(l.address) ?? '0') >= amountAtomic)
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
    const message = error instanceof Error ? (error instanceof DemoError ? error.message : `${error.name}: ${error.message}`) : String(error)
    process.stderr.write(`demo failed: ${message}\n`)
    process.exit(1)
  },
)
