// DESIGN section 9 under fire: the service runs as its own process (src/app/main.ts on a networks file), concurrent agents
// sign in, register lenders, create jobs funded on chain beforehand, request credit, match and dispatch over HTTP,
// and the process is killed with SIGKILL at a random moment, several times. After each restart on the same data
// directory every acknowledged (2xx) change is there, retries of unacknowledged keyed requests apply at most once,
// and the money invariants of DESIGN section 4 hold; at the end the store is read directly and the engine restored
// in-process checks every invariant.
import t, { type Test } from 'tap'
import { open } from 'lmdb'
import { createWalletClient, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { findToken } from '../../src/chain/config.ts'
import { defaultDevnetNetworks, startDevnet, type Devnet } from '../../src/chain/devnet.ts'
import { idKey } from '../../src/chain/ids.ts'
import { ChainAgent, type WireTransaction } from '../../src/client/chain.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startApp } from '../../src/app/app.ts'
import { storedValueEncoding } from '../../src/store/index.ts'
import { loadServiceConfig } from '../../src/app/config.ts'
import { ESTABLISHED_ALLOWANCE } from '../fixtures/allowance.ts'
import { fund, tempDataDir, USDC, usdc } from '../fixtures/service.ts'
import {
  killAllServices, LEASE_SIGNER_KEY_ENV, OPERATOR_KEY_ENV, removeDir, startService, writeServiceFiles, type ServiceFiles, type ServiceProcess,
} from './fixtures/child-service.ts'

const KILLS = 4
const WORKERS = 6
/** The kill comes at a uniformly random moment of this window after the load started. */
const KILL_AFTER_MS_MIN = 300
const KILL_AFTER_MS_MAX = 1500
const JOBS = 16
const FUNDED_LENDERS = 2
/** Nothing expires during the test (lease and offer TTLs far beyond it), so every acknowledged actor must be live. */
// The load signs the same borrowers in again after every kill while its workers keep their tokens: a per-wallet bound
// above what the run can reach keeps every acknowledged session meant to authenticate. Likewise the live offers of
// each of the 4 borrowers, which all stay live: a faster engine fits more than the default 100 in the run, and so
// the advances and offers of each job (advancesPerJobMax counts the borrower's live offers).
// Its lenders are established (ESTABLISHED_ALLOWANCE): each holds many of the load's live leases at once.
const SERVICE_CONFIG = {
  leaseTtlSeconds: 3600, offerTtlSeconds: 7 * 24 * 3600, sessionsPerWalletMax: 1000,
  engine: { liveOffersPerBorrowerMax: 100_000, advancesPerJobMax: 100_000, lenderLeaseAllowanceInitial: ESTABLISHED_ALLOWANCE },
}

type Reply = { status: number; body: any }
const random = (n: number) => Math.floor(Math.random() * n)
const pick = <T>(list: readonly T[]): T | undefined => (list.length === 0 ? undefined : list[random(list.length)])

/** A page of GET /lenders. */
type LenderPage = { body: { address: Address }[]; headers: Headers }

async function call(url: string, method: string, path: string, body?: unknown, token?: string, key?: string): Promise<Reply> {
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (key) headers['idempotency-key'] = key
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null }
}

/** The run's sessionsPerWalletMax: a wallet's oldest sessions beyond it end. */
const SESSIONS_PER_WALLET_MAX = SERVICE_CONFIG.sessionsPerWalletMax

async function signIn(url: string, account: PrivateKeyAccount): Promise<string> {
  return new CreditClient(url).signIn(account)
}

/** A keyed mutation: retried with the same Idempotency-Key after a kill until it gets an answer. */
interface KeyedOp {
  kind: 'register' | 'job' | 'credit' | 'match'
  account: PrivateKeyAccount
  path: string
  body: unknown
  key: string
  answered: boolean
}

interface Borrower {
  account: PrivateKeyAccount
  token: string
}

interface Lease {
  leaseId: string
  offerId: string
  lender: Address
  expiresAt: string
  amountAtomic: string
}

let devnet: Devnet
let files: ServiceFiles
let dataDir: string
let service: ServiceProcess | undefined
t.before(async () => {
  devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]], advancesPerJobMax: BigInt(SERVICE_CONFIG.engine.advancesPerJobMax) })
  files = writeServiceFiles(devnet.accounts, devnet.networks, SERVICE_CONFIG)
  dataDir = tempDataDir('agent-credit-kill-')
  process.env[OPERATOR_KEY_ENV] = devnet.accounts.operator.privateKey
  process.env[LEASE_SIGNER_KEY_ENV] = devnet.accounts.leaseSigner.privateKey
})
t.teardown(async () => {
  killAllServices()
  await devnet?.stop()
  delete process.env[OPERATOR_KEY_ENV]
  delete process.env[LEASE_SIGNER_KEY_ENV]
  if (files) removeDir(files.dir)
  if (dataDir) removeDir(dataDir)
})

t.test('SIGKILL under load loses no acknowledged change, applies no retry twice, keeps every invariant', async (t) => {
  const network = devnet.networks[0] as (typeof devnet.networks)[number]
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0' }
  const start = async () => {
    service = await startService(env)
    return service.url
  }
  let url = await start()

  // ---- the world the load runs in: funded lenders (their session keys hold the asset), borrowers, jobs funded on chain
  const acked = {
    lenders: new Set<Address>(),
    sessions: new Map<string, Address>(),
    jobs: new Set<string>(),
    offers: new Map<string, Borrower>(),
    leases: new Map<string, Lease>(),
    dispatches: 0,
  }
  const attempted = { registrations: 0, jobs: 0, credits: 0 }
  const unexpected: string[] = []
  const funded: { account: PrivateKeyAccount; token: string; session: Address }[] = []
  for (let i = 0; i < FUNDED_LENDERS; i++) {
    const account = privateKeyToAccount(generatePrivateKey())
    const token = await signIn(url, account)
    acked.sessions.set(token, account.address)
    const reply = await call(url, 'POST', '/lenders/register', {
      availableLiquidityAtomic: usdc(1_000_000).toString(), asset: USDC, networks: [network.slug], minFeeBps: 50 + i,
      maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
    }, token)
    t.equal(reply.status, 201)
    acked.lenders.add(account.address)
    const session = privateKeyToAccount(reply.body.sessionKey.privateKey)
    await fund(devnet, network, session.address, usdc(1_000_000))
    for (const tx of reply.body.setupTransactions as WireTransaction[]) await new ChainAgent(network, session).sendUnsigned(tx)
    funded.push({ account, token, session: session.address })
  }
  const borrowers: Borrower[] = []
  for (let i = 0; i < 4; i++) {
    const account = privateKeyToAccount(generatePrivateKey())
    const token = await signIn(url, account)
    acked.sessions.set(token, account.address)
    borrowers.push({ account, token })
  }
  const jobPool: { jobId: string; borrower: Borrower; txHash: `0x${string}` }[] = []
  {
    const jobClient = privateKeyToAccount(devnet.accounts.jobClient.privateKey)
    const agent = new ChainAgent(network, jobClient)
    await agent.approveCredit(USDC, usdc(1000) * BigInt(JOBS))
    const wallet = createWalletClient({ account: jobClient, chain: networkChain(network), transport: http(network.rpcUrl) })
    for (let i = 0; i < JOBS; i++) {
      const jobId = `job_kill_${i}`
      const borrower = borrowers[i % borrowers.length] as Borrower
      const txHash = await wallet.writeContract({
        address: network.creditContract, abi: creditFacilityV2Abi, functionName: 'fundJob',
        args: [idKey(jobId), findToken(network, USDC).address, usdc(1000), borrower.account.address],
      } as never)
      await agent.publicClient.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 })
      jobPool.push({ jobId, borrower, txHash })
    }
  }

  /** The watcher of a (re)started service must see the funded session keys before matching can lease to them. */
  const walletsLoaded = async () => {
    const deadline = Date.now() + 15_000
    for (const lender of funded) {
      for (;;) {
        const wallet = await call(url, 'GET', `/lenders/${lender.account.address}/wallet`)
        if (wallet.status === 200 && wallet.body.holdings[0].spendableAtomic === usdc(1_000_000).toString()) break
        if (Date.now() > deadline) throw new Error(`wallet of ${lender.account.address} not loaded: ${JSON.stringify(wallet.body)}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }
  await walletsLoaded()

  // ---- the load
  const pending: KeyedOp[] = []
  let creditSeq = 0
  const borrowerOfJob = new Map(jobPool.map((j) => [j.jobId, j.borrower]))
  const leasedOffers = new Set<string>()
  const noteLease = (lease: Lease | null | undefined) => {
    if (!lease) return
    acked.leases.set(lease.leaseId, { leaseId: lease.leaseId, offerId: lease.offerId, lender: lease.lender, expiresAt: lease.expiresAt, amountAtomic: lease.amountAtomic })
    leasedOffers.add(lease.offerId)
  }

  /** Sends a keyed op (first try or retry) and records what an answer acknowledges. */
  const runKeyed = async (op: KeyedOp, token: string) => {
    const reply = await call(url, 'POST', op.path, op.body, token, op.key)
    op.answered = true
    if (reply.status >= 200 && reply.status < 300) {
      if (op.kind === 'register') {
        acked.lenders.add(op.account.address)
      } else if (op.kind === 'job') {
        acked.jobs.add((op.body as { jobId: string }).jobId)
      } else if (op.kind === 'credit') {
        if (reply.body.decision !== 'approved') unexpected.push(`credit declined: ${JSON.stringify(reply.body.reasons)}`)
        else acked.offers.set(reply.body.offer.offerId, borrowerOfJob.get((op.body as { repaymentSource: string }).repaymentSource) as Borrower)
      } else {
        noteLease(reply.body.lease)
        for (const refused of reply.body.refusedLeases) unexpected.push(`refused lease ${refused.leaseId}`)
      }
    } else if (!(op.kind === 'match' && reply.status === 409 && reply.body.code === 'offer_not_offered')) {
      unexpected.push(`${op.path} ${reply.status} ${reply.body?.code}`)
    }
  }

  const lenderTokens = new Map<Address, string>()
  const oneOp = async () => {
    const r = Math.random()
    if (r < 0.08) {
      const borrower = pick(borrowers) as Borrower
      const token = await signIn(url, borrower.account)
      acked.sessions.set(token, borrower.account.address)
    } else if (r < 0.23) {
      const account = privateKeyToAccount(generatePrivateKey())
      const op: KeyedOp = {
        kind: 'register', account, path: '/lenders/register', key: `register-${account.address}`, answered: false,
        body: {
          availableLiquidityAtomic: usdc(1000).toString(), asset: USDC, networks: [network.slug], minFeeBps: 300 + random(600),
          maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
        },
      }
      pending.push(op)
      attempted.registrations++
      const token = await signIn(url, account)
      acked.sessions.set(token, account.address)
      lenderTokens.set(account.address, token)
      await runKeyed(op, token)
    } else if (r < 0.29) {
      const job = jobPool[attempted.jobs]
      if (job === undefined) return
      attempted.jobs++
      const op: KeyedOp = {
        kind: 'job', account: job.borrower.account, path: '/credit/jobs', key: `job-${job.jobId}`, answered: false,
        body: {
          jobId: job.jobId, network: network.slug, asset: USDC, agent: job.borrower.account.address, receivableAtomic: usdc(1000).toString(),
          dueAt: new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString(), fundingTxHash: job.txHash,
        },
      }
      pending.push(op)
      await runKeyed(op, job.borrower.token)
    } else if (r < 0.65) {
      const jobId = pick([...acked.jobs])
      if (jobId === undefined) return
      const borrower = borrowerOfJob.get(jobId) as Borrower
      const n = ++creditSeq
      attempted.credits++
      const op: KeyedOp = {
        kind: 'credit', account: borrower.account, path: '/credit/request', key: `credit-${n}`, answered: false,
        body: {
          agent: borrower.account.address, network: network.slug, asset: USDC, productType: 'job', amountAtomic: (usdc(1) + BigInt(n)).toString(),
          purpose: 'inference compute', supplier: 'Devnet demo supplier', supplierDomain: 'supplier.devnet', repaymentSource: jobId,
          maximumFeeAtomic: usdc(1).toString(),
        },
      }
      pending.push(op)
      await runKeyed(op, borrower.token)
    } else if (r < 0.9) {
      const offerId = pick([...acked.offers.keys()].filter((id) => !leasedOffers.has(id)))
      if (offerId === undefined) return
      const borrower = acked.offers.get(offerId) as Borrower
      leasedOffers.add(offerId)
      const op: KeyedOp = { kind: 'match', account: borrower.account, path: '/credit/match', key: `match-${offerId}`, answered: false, body: { offerId } }
      pending.push(op)
      await runKeyed(op, borrower.token)
    } else {
      const reply = await call(url, 'POST', '/credit/dispatch', {}, (pick(borrowers) as Borrower).token)
      if (reply.status !== 200) unexpected.push(`dispatch ${reply.status}`)
      acked.dispatches++
      for (const match of reply.body.matches) noteLease(match.lease)
    }
  }

  const load = async (killAfterMs: number) => {
    let killed = false
    const worker = async () => {
      while (!killed) {
        try {
          await oneOp()
        } catch (error) {
          // Only the kill may cut a request off.
          if (!killed) unexpected.push(`request failed before the kill: ${String(error)}`)
        }
      }
    }
    const workers = Array.from({ length: WORKERS }, worker)
    await new Promise((resolve) => setTimeout(resolve, killAfterMs))
    killed = true
    const exit = await (service as ServiceProcess).stop('SIGKILL')
    await Promise.all(workers)
    return exit
  }

  /** Retries every keyed op that got no answer, with its key: a committed one replays, a lost one applies now. */
  const retryUnanswered = async () => {
    for (const op of pending.filter((o) => !o.answered)) {
      let token: string | undefined
      if (op.kind === 'register') token = lenderTokens.get(op.account.address)
      else token = borrowers.find((b) => b.account.address === op.account.address)?.token
      if (token === undefined) {
        token = await signIn(url, op.account)
        acked.sessions.set(token, op.account.address)
        if (op.kind === 'register') lenderTokens.set(op.account.address, token)
      }
      await runKeyed(op, token)
    }
  }

  /** Everything acknowledged so far is there, through the public API. */
  const verify = async (t: Test, label: string) => {
    // GET /lenders is paged: follow next-after to the end.
    const listed = new Set<Address>()
    const reader = new CreditClient(url)
    for (let after: string | null = null, pages = 0; pages < 100; pages++) {
      const page: LenderPage = await reader.get<{ address: Address }[]>(`/lenders?limit=1000${after === null ? '' : `&after=${after}`}`)
      for (const lender of page.body) listed.add(lender.address)
      after = page.headers.get('next-after')
      if (after === null) break
    }
    t.same([...acked.lenders].filter((a) => !listed.has(a)), [], `${label}: every acknowledged lender is listed (${acked.lenders.size})`)
    const state = (await call(url, 'GET', '/credit/state')).body
    const { counts, totals } = state
    t.equal(counts.lenders, FUNDED_LENDERS + attempted.registrations, `${label}: every registration applied exactly once`)
    t.equal(counts.liveJobs, attempted.jobs, `${label}: every job created exactly once (${attempted.jobs})`)
    t.equal(counts.liveOffers, acked.offers.size, `${label}: every acknowledged offer live, none twice (${acked.offers.size})`)
    t.ok(counts.liveLeases >= acked.leases.size, `${label}: ${counts.liveLeases} live leases >= ${acked.leases.size} acknowledged`)
    const sum = (...keys: string[]) => keys.reduce((acc, k) => acc + BigInt(totals[k]), 0n)
    t.equal(sum('policyAvailableAtomic', 'reservedAtomic', 'deployedAtomic'), sum('registeredAtomic', 'feesEarnedAtomic') - sum('lossesAtomic', 'withdrawnAtomic'), `${label}: available + reserved + deployed = registered + fees - losses - withdrawn`)
    t.ok(BigInt(totals.availableAtomic) >= 0n && BigInt(totals.availableAtomic) <= BigInt(totals.policyAvailableAtomic), `${label}: available liquidity is not negative, nor above the policies'`)
    t.equal(totals.registeredAtomic, (usdc(1_000_000) * BigInt(FUNDED_LENDERS) + usdc(1000) * BigInt(attempted.registrations)).toString(), `${label}: registered liquidity sums the registrations`)

    // The live leases, from the lenders' own pending actions: each acknowledged one, with its original expiry.
    const live = new Map<string, Lease>()
    for (const lender of funded) {
      const actions = await call(url, 'GET', `/lenders/${lender.account.address}/actions`, undefined, lender.token)
      t.equal(actions.status, 200)
      for (const action of actions.body) if (action.kind === 'pay_supplier') live.set(action.lease.leaseId, action.lease)
    }
    t.equal(live.size, counts.liveLeases, `${label}: every live lease belongs to a funded lender`)
    t.equal([...live.values()].reduce((acc, l) => acc + BigInt(l.amountAtomic), 0n).toString(), totals.reservedAtomic, `${label}: reserved liquidity = the live leases`)
    const lost = [...acked.leases.values()].filter((l) => live.get(l.leaseId)?.expiresAt !== l.expiresAt || live.get(l.leaseId)?.offerId !== l.offerId)
    t.same(lost, [], `${label}: every acknowledged lease is live with its offer and expiry`)
    const strayLeases = [...live.values()].filter((l) => !acked.offers.has(l.offerId))
    t.same(strayLeases, [], `${label}: every live lease is on an acknowledged offer`)

    // Every acknowledged sign-in still authenticates (404: a signed-in wallet that is no lender; 401 would be lost),
    // except those the per-wallet bound ended on purpose (sessionsPerWalletMax, oldest dropped): of a wallet's n
    // acknowledged sessions at most n - SESSIONS_PER_WALLET_MAX may be refused, and never its latest.
    const tokens = [...acked.sessions]
    const refusedOf = new Map<Address, number>()
    const latestOf = new Map<Address, string>()
    const countOf = new Map<Address, number>()
    for (const [token, address] of tokens) {
      latestOf.set(address, token)
      countOf.set(address, (countOf.get(address) ?? 0) + 1)
    }
    for (let i = 0; i < tokens.length; i += 25) {
      const batch = tokens.slice(i, i + 25)
      const replies = await Promise.all(batch.map(([token, address]) => call(url, 'GET', `/lenders/${address}/actions`, undefined, token)))
      replies.forEach((r, j) => {
        if (r.status === 200 || r.status === 404) return
        const [token, address] = batch[j] as [string, Address]
        refusedOf.set(address, (refusedOf.get(address) ?? 0) + 1)
        if (latestOf.get(address) === token) t.fail(`${label}: the latest acknowledged session of ${address} refused: ${JSON.stringify(r)}`)
      })
    }
    const overBound = [...refusedOf].filter(([address, refused]) => refused > Math.max(0, (countOf.get(address) ?? 0) - SESSIONS_PER_WALLET_MAX))
    t.same(overBound, [], `${label}: no wallet lost an acknowledged session beyond the per-wallet bound`)
    t.pass(`${label}: all ${tokens.length} acknowledged sessions authenticate or were ended by the per-wallet bound`)
    return { state, live }
  }

  for (let kill = 1; kill <= KILLS; kill++) {
    const killAfterMs = KILL_AFTER_MS_MIN + random(KILL_AFTER_MS_MAX - KILL_AFTER_MS_MIN)
    const before = { offers: acked.offers.size, leases: acked.leases.size, lenders: acked.lenders.size }
    const exit = await load(killAfterMs)
    t.equal(exit.signal, 'SIGKILL', `kill ${kill}: the service died of SIGKILL`)
    const cut = pending.filter((o) => !o.answered).length
    t.comment(
      `kill ${kill} at ${killAfterMs} ms: acknowledged +${acked.offers.size - before.offers} offers, +${acked.leases.size - before.leases} leases, ` +
        `+${acked.lenders.size - before.lenders} lenders; ${cut} keyed requests cut off`,
    )
    url = await start()
    await walletsLoaded()
    await retryUnanswered()
    await verify(t, `after kill ${kill}`)
  }

  // Every acknowledged offer that no acknowledged answer showed leased is either leased now (a dispatch whose answer
  // the kill cut off) or still offered: a match of it refers to it.
  const { live } = await verify(t, 'final')
  const leasedNow = new Set([...live.values()].map((l) => l.offerId))
  for (const [offerId, borrower] of acked.offers) {
    if (leasedNow.has(offerId)) continue
    const reply = await call(url, 'POST', '/credit/match', { offerId }, borrower.token)
    t.equal(reply.status, 200, `offer ${offerId} can be matched`)
    t.equal(reply.body.offer.offerId, offerId, 'the match refers to the acknowledged offer')
    noteLease(reply.body.lease)
  }
  const final = await verify(t, 'after matching the rest')
  t.same(unexpected, [], 'no request failed except those the kills cut off')
  t.comment(`totals: ${acked.lenders.size} lenders, ${attempted.jobs} jobs, ${acked.offers.size} offers, ${acked.leases.size} leases, ${acked.sessions.size} sessions, ${acked.dispatches} dispatches acknowledged`)
  const stopped = await (service as ServiceProcess).stop('SIGTERM')
  t.equal(stopped.code, 0, 'a clean stop after the last restart')

  // The store itself, opened read-only: each acknowledged id has its snapshot or record.
  const root = open({ path: dataDir, readOnly: true, maxDbs: 8 } as never)
  try {
    const snapshots = root.openDB({ name: 'snapshots', ...storedValueEncoding(root) } as never)
    const records = root.openDB({ name: 'records', ...storedValueEncoding(root) } as never)
    const missing = [
      ...[...acked.lenders].filter((id) => snapshots.get(['lender', id]) === undefined || records.get(['session-keys', id]) === undefined).map((id) => `lender ${id}`),
      ...[...acked.jobs].filter((id) => snapshots.get(['job', id]) === undefined).map((id) => `job ${id}`),
      ...[...acked.offers.keys()].filter((id) => snapshots.get(['offer', id]) === undefined).map((id) => `offer ${id}`),
      ...[...acked.leases.keys()].filter((id) => snapshots.get(['lease', id]) === undefined).map((id) => `lease ${id}`),
    ]
    t.same(missing, [], 'every acknowledged lender, session key, job, offer and lease is in the store')
  } finally {
    await root.close()
  }

  // The engine restored in-process from the same directory: every invariant of DESIGN section 4, same state as served.
  const app = await startApp(
    loadServiceConfig({ ...env, PORT: '0', REQUEST_LOG: '0', RATE_LIMIT_PER_SECOND: '0' }),
    { onFatal: (error) => t.fail(`commit failed: ${String(error)}`) },
  )
  try {
    t.doesNotThrow(() => app.service.engine.checkInvariants(), 'every invariant holds in the restored engine')
    // Available liquidity is what the session wallets can pay: it is 0 until the wallet watcher has read them once.
    let state = (await call(app.url, 'GET', '/credit/state')).body
    for (const deadline = Date.now() + 20_000; state.totals.availableAtomic === '0' && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      state = (await call(app.url, 'GET', '/credit/state')).body
    }
    t.same(state, final.state, 'the restored engine holds exactly the state the service last served')
  } finally {
    await app.stop()
  }
})
