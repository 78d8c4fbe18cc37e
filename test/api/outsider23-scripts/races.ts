// outsider23: races a hostile caller can run over HTTP on one advance past due. The completion takes the job's lock,
// the liquidation the advance's (src/service/operator-commands.ts), so the client's POST .../complete, its
// POST .../fail and the lender's POST .../liquidate run at once, each sending its operator transaction. Checks after
// each round: at most one of complete/fail answered 200, the records equal the chain (reconciliation), every advance's
// owed is the contract's, the borrower's passport counts no end twice, and every 409 contract_reverted (an operator
// transaction mined reverted) is listed with its gas. On 87b14be a failure and a liquidation at once answered one of
// them 409 contract_reverted (out of gas: the second mined closes the job), nothing recorded, while a retry succeeded;
// fixed since (test/api/outsider23-operator-race.test.ts). Exits 1 on any difference.
// node --import tsx test/api/outsider23-scripts/races.ts
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../../src/chain/artifacts.ts'
import { jobKey } from '../../../src/chain/ids.ts'
import { ChainAgent } from '../../../src/client/chain.ts'
import { advanceChainTime, fund, fundedJob, readyLender, signedIn, startHarness, usdc, type ReadyLender } from '../../fixtures/service.ts'
import { fundAdvance } from '../fixtures/api.ts'

let skewMs = 0
const h = await startHarness({ clock: () => Date.now() + skewMs })
let bad = 0
const fail = (what: string, detail: unknown) => {
  bad++
  console.log('DIFFERENCE:', what, JSON.stringify(detail))
}
try {
  let lender: ReadyLender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(5000) })
  const rounds: Array<{ name: string; ops: Array<'complete' | 'fail' | 'liquidate'>; collateral: bigint }> = [
    { name: 'complete+liquidate', ops: ['complete', 'liquidate'], collateral: usdc(150) },
    { name: 'liquidate+complete', ops: ['liquidate', 'complete'], collateral: usdc(150) },
    { name: 'fail+liquidate', ops: ['fail', 'liquidate'], collateral: usdc(150) },
    { name: 'liquidate+fail', ops: ['liquidate', 'fail'], collateral: 0n },
    { name: 'complete+fail+liquidate', ops: ['complete', 'fail', 'liquidate'], collateral: usdc(50) },
  ]
  const prepared = []
  for (const [i, round] of rounds.entries()) {
    const jobId = `job_o23_race_${i}`
    const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
    if (round.collateral > 0n) {
      await fund(h.devnet, h.network, borrower.address, round.collateral)
      const tx = await new ChainAgent(h.network, borrower).postCollateral(jobId, 'USDC', round.collateral)
      const posted = await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: round.collateral.toString(), txHash: tx })
      if (posted.status !== 201) throw new Error(JSON.stringify(posted.body))
    }
    const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(100), maximumFeeAtomic: usdc(5) })
    prepared.push({ round, jobId, borrower, jobClient, advance })
  }
  // Past every job's due time on the chain and the service.
  const chainTimeMs = await advanceChainTime(h, 2 * 3600)
  skewMs = chainTimeMs - Date.now() + 1000
  lender = { ...lender, client: await signedIn(h.url, lender.account) }
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const agent = new ChainAgent(h.network, lender.account)
  for (const { round, jobId, borrower, jobClient, advance } of prepared) {
    const clientApi = await signedIn(h.url, jobClient)
    const calls = round.ops.map((op) =>
      op === 'complete' ? clientApi.post(`/credit/jobs/${jobId}/complete`, {}, { idempotencyKey: `c-${jobId}` })
        : op === 'fail' ? clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' }, { idempotencyKey: `f-${jobId}` })
          : lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {}, { idempotencyKey: `l-${jobId}` }))
    const answers = await Promise.all(calls)
    console.log(round.name, answers.map((a, i) => `${round.ops[i]} ${a.status} ${a.body.code ?? ''}`).join(' | '))
    // Retries of whatever answered 503 (as an agent would), until each is answered for good.
    for (const [i, a] of answers.entries()) {
      let reply = a
      if (reply.body.code === 'contract_reverted') {
        fail(`${round.name}: ${round.ops[i]} answered 409 contract_reverted`, reply.body.detail)
        const hash = /0x[0-9a-f]{64}/.exec(JSON.stringify(reply.body))?.[0]
        if (hash !== undefined) {
          const receipt = await agent.publicClient.getTransactionReceipt({ hash: hash as `0x${string}` })
          const tx = await agent.publicClient.getTransaction({ hash: hash as `0x${string}` })
          console.log('   its transaction: status', receipt.status, 'gas used', receipt.gasUsed, 'of', tx.gas, 'block', receipt.blockNumber)
        }
      }
      for (let n = 0; (reply.status === 503 || reply.body.code === 'contract_reverted') && n < 20; n++) {
        await new Promise((r) => setTimeout(r, 500))
        const op = round.ops[i]
        reply = op === 'complete' ? await clientApi.post(`/credit/jobs/${jobId}/complete`, {}, { idempotencyKey: `c-${jobId}` })
          : op === 'fail' ? await clientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'late' }, { idempotencyKey: `f-${jobId}` })
            : await lender.client.post(`/credit/advances/${advance.advanceId}/liquidate`, {}, { idempotencyKey: `l-${jobId}` })
        if (reply.status !== 503) console.log('  retry', op, reply.status, reply.body.code ?? '')
      }
      answers[i] = reply
    }
    const ended = answers.filter((a, i) => round.ops[i] !== 'liquidate' && a.status === 200).length
    if (ended > 1) fail(`${round.name}: both the completion and the failure answered 200`, answers.map((a) => a.status))
    const onChainJob = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })
    const onChainAdvance = await agent.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey] }) as any
    const job = (await operator.get(`/credit/jobs/${jobId}`)).body
    const adv = (await operator.get(`/credit/advances/${advance.advanceId}`)).body
    console.log('  chain: job status', onChainJob.status, 'advance', JSON.stringify(onChainAdvance, (_, v) => typeof v === 'bigint' ? v.toString() : v))
    console.log('  records: job', job.state, job.failureReason ?? '', '| advance', adv.state, 'lenderOwed', adv.lenderOwedAtomic, 'reserveOwed', adv.reserveOwedAtomic)
    if (adv.lenderOwedAtomic !== onChainAdvance.lenderOwed.toString()) fail(`${round.name}: lender owed differs`, { records: adv.lenderOwedAtomic, chain: onChainAdvance.lenderOwed.toString() })
    if (adv.reserveOwedAtomic !== onChainAdvance.reserveOwed.toString()) fail(`${round.name}: reserve owed differs`, { records: adv.reserveOwedAtomic, chain: onChainAdvance.reserveOwed.toString() })
    const passport = (await operator.get(`/passport/${borrower.address}`)).body as Array<{ kind: string }>
    const record = h.app.service.engine.getBorrower(borrower.address)!
    console.log('  passport:', passport.map((e) => e.kind).join(', '), '| borrower', JSON.stringify({ defaulted: record.advancesDefaulted, repaid: record.advancesRepaid, reputationBps: record.reputationBps, suspended: record.suspended }))
    // A liquidation's default and a later repayment in full (the settlement paying the reserve's share) are two entries.
    const count = (kinds: string[]) => passport.filter((e) => kinds.includes(e.kind)).length
    if (count(['advance_repaid']) > 1 || count(['advance_defaulted', 'liquidated_with_shortfall']) > 1 || count(['job_failed']) > 1) {
      fail(`${round.name}: an end counted twice in the passport`, passport.map((e) => e.kind))
    }
  }
  const reconciled = await operator.post('/operator/reconcile', { network: h.network.slug })
  const differences = reconciled.body.networks?.[0]?.differences
  console.log('reconciliation differences:', JSON.stringify(differences))
  if (!Array.isArray(differences) || differences.length > 0) fail('reconciliation', differences)
  // The operator's reverted transactions: their gas used against their limit.
  const head = await agent.publicClient.getBlockNumber()
  for (let n = 1n; n <= head; n++) {
    const block = await agent.publicClient.getBlock({ blockNumber: n, includeTransactions: true })
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== h.devnet.accounts.operator.address.toLowerCase()) continue
      const receipt = await agent.publicClient.getTransactionReceipt({ hash: tx.hash })
      if (receipt.status !== 'success') console.log('reverted operator transaction', tx.hash, 'block', n, 'gas used', receipt.gasUsed, 'of', tx.gas)
    }
  }
  const health = (await operator.get('/health')).body
  console.log('health:', JSON.stringify(health).slice(0, 400))
} finally {
  await h.stop()
}
console.log(bad === 0 ? 'no difference found' : `${bad} difference(s)`)
process.exit(bad === 0 ? 0 : 1)
