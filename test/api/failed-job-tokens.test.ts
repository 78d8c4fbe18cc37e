// Issue 9, cases 3 and 5, over HTTP against the devnet, with every balance read on chain as an outsider would (viem,
// not the service): a failed job's escrow goes back to its client at once, the operator's liquidation pays the lender
// first and the reserve its share of the fee out of the collateral, and the borrower's unused collateral comes back;
// afterwards the credit contract holds nothing for the job. The insurance share is the network's rule (1000 bps of
// the fee here, the devnet's default).
import t, { type Test } from 'tap'
import { erc20Abi, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { jobKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance } from './fixtures/api.ts'
import { verifyPassport, type SignedPassportEvent } from '../../src/passport/passport.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

type ChainJob = { escrow: bigint; collateral: bigint; status: number }
const statusFailed = 3
const statusClosed = 4

/** The balances of a failed job's parties and of the contract, read from the chain. */
async function balances<K extends string>(holders: Record<K, Address>): Promise<Record<K | 'contract' | 'reserve', bigint>> {
  const chain = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))
  const token = chain.token(USDC)
  const read = (holder: Address) => chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
  const entries = await Promise.all(Object.entries<Address>(holders).map(async ([name, holder]) => [name, await read(holder)] as const))
  const reserve = await chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reserveOf', args: [token] })
  return { ...(Object.fromEntries(entries) as Record<K, bigint>), contract: await read(h.network.creditContract), reserve } as Record<K | 'contract' | 'reserve', bigint>
}

async function chainJob(jobId: string): Promise<ChainJob> {
  const chain = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))
  return (await chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getJob', args: [jobKey(h.network, jobId)] })) as ChainJob
}

/**
 * 200 escrowed by the client, `collateralAtomic` posted by the borrower, 40 drawn and paid to the supplier by a lender
 * asking 250 bps (fee 1, reserve share 0.1), the job failed by its client, the advance liquidated by the operator.
 */
async function failAndLiquidate(t: Test, jobId: string, collateralAtomic: bigint) {
  const lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
  const borrower = await fundedAccount(h.devnet, h.network, collateralAtomic)
  const { borrowerClient, jobClient, jobClientApi } = await fundedJob(h, { jobId, receivableAtomic: usdc(200), borrower })
  const posted = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, collateralAtomic)
  const position = await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: collateralAtomic.toString(), txHash: posted })
  t.equal(position.status, 201, JSON.stringify(position.body))
  const holders = { client: jobClient.address, borrower: borrower.address, lender: lender.session.address, supplier: h.devnet.accounts.supplier.address }
  const start = await balances(holders)
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  t.equal(advance.feeAtomic, usdc(1).toString(), 'fee = ceil(40 x 250 / 10000)')
  const paid = await balances(holders)
  t.equal(paid.supplier - start.supplier, usdc(40), 'the supplier received the principal')
  t.equal(start.lender - paid.lender, usdc(40), 'from the lender\'s session wallet')
  t.equal(paid.contract, start.contract, 'the principal never passes through the contract')

  const failed = await jobClientApi.post(`/credit/jobs/${jobId}/fail`, { reason: 'not_delivered' })
  t.equal(failed.status, 200, JSON.stringify(failed.body))
  const afterFail = await balances(holders)
  t.equal(afterFail.client - paid.client, usdc(200), 'the failed job earned nothing: its whole escrow went back to the client at failJob')
  t.equal(paid.contract - afterFail.contract, usdc(200), 'the contract gave up the escrow and nothing else')
  t.has(await chainJob(jobId), { escrow: 0n, collateral: collateralAtomic, status: statusFailed }, 'the collateral waits for the advance\'s recovery')

  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const receipt = await operator.post(`/credit/advances/${advance.advanceId}/liquidate`, {})
  t.equal(receipt.status, 200, JSON.stringify(receipt.body))
  const end = await balances(holders)
  t.has(await chainJob(jobId), { escrow: 0n, collateral: 0n, status: statusClosed }, 'the job is closed and the contract holds nothing for it')
  t.equal(end.contract - end.reserve, start.contract - start.reserve - usdc(200) - collateralAtomic, 'every token of the job left the contract but the reserve\'s share')
  // The service's ledger says the same as the chain: the lender's recovery and the reserve (GET /credit/state).
  const state = await operator.get('/credit/state')
  const reserve = state.body.reserves.find((r: { network: string; asset: string }) => r.network === h.network.slug && r.asset === USDC)
  t.equal(BigInt(reserve?.balanceAtomic ?? 0), end.reserve, 'the service\'s reserve is the contract\'s')
  return { advance, receipt: receipt.body, start, afterFail, end, lender, borrower, operator, holders }
}

t.test('case 3: a failed job\'s escrow goes back to its client, its collateral to the lender and nothing stays locked', async (t) => {
  const { receipt, afterFail, end, advance } = await failAndLiquidate(t, 'job_fail_tokens_3', usdc(10))
  const step = (name: string) => BigInt(receipt.steps.find((s: { step: string }) => s.step === name)?.amountAtomic ?? -1)
  // Owed 41: lender 40.9, reserve 0.1. The collateral (10) pays the lender's part first; the reserve (empty on this
  // devnet) pays nothing; the rest stays owed by the borrower.
  t.equal(step('source_revenue'), 0n, 'a failed job\'s escrow is not revenue of the repayment source: it went back to the client')
  t.equal(step('collateral'), usdc(10))
  t.equal(step('insurance_reserve'), 0n)
  t.equal(BigInt(receipt.shortfallAtomic), usdc(31))
  t.equal(end.lender - afterFail.lender, usdc(10), 'the whole collateral reached the lender\'s session wallet')
  t.equal(end.borrower, afterFail.borrower, 'no collateral was left to give back')
  t.equal(end.client, afterFail.client, 'the client already had its escrow back')
  t.equal(end.reserve, afterFail.reserve, 'the lender is paid before the reserve takes its share')
  const onChain = await new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey)).publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey],
  }) as { lenderOwed: bigint; reserveOwed: bigint; liquidated: boolean }
  t.equal(onChain.lenderOwed, usdc(41) - usdc(1) / 10n - usdc(10), 'the lender is still owed what nobody covered')
  t.equal(onChain.reserveOwed, usdc(1) / 10n, 'and the reserve its share')
})

t.test('case 5: a liquidation covered by collateral pays the lender principal + fee - the reserve\'s share, and the reserve 1000 bps of the fee', async (t) => {
  const { receipt, afterFail, end, lender, borrower, operator, advance } = await failAndLiquidate(t, 'job_fail_tokens_5', usdc(100))
  const share = (usdc(1) * 1000n) / 10_000n
  t.equal(h.app.catalog().rules.insuranceShareBps, 1000, 'the published share')
  t.equal(receipt.stoppedAt, 'collateral', 'the collateral covered everything owed')
  t.equal(receipt.shortfallAtomic, '0')
  t.equal(end.lender - afterFail.lender, usdc(41) - share, 'the lender received principal + fee - the reserve\'s share')
  t.equal(end.reserve - afterFail.reserve, share, 'the reserve received 1000 bps of the fee')
  t.equal(end.borrower - afterFail.borrower, usdc(100) - usdc(41), 'the unused collateral went back to the borrower')
  t.equal(afterFail.contract - end.contract, usdc(100) - share, 'the contract kept only the reserve\'s share')
  const recorded = h.app.service.engine.getLender(lender.account.address)
  t.equal(recorded?.feesEarnedAtomic, usdc(1) - share, 'the service counts the lender\'s part of the fee, not the reserve\'s')
  // The borrower's passport: the failed job, then the default its collateral covered, chained and signed.
  const passport = (await operator.get(`/passport/${borrower.address}`)).body as SignedPassportEvent[]
  t.same(passport.map((e) => e.kind), ['job_failed', 'advance_defaulted'], 'a liquidation that recovered everything is still a default')
  t.match(JSON.parse(passport[1]?.details as string), { advanceId: advance.advanceId, shortfallAtomic: '0', recoveredAtomic: receipt.owedAtomic, txHash: receipt.txHash })
  t.same(await verifyPassport(passport, { issuer: h.app.catalog().passport.issuer as `0x${string}` }), { ok: true, problems: [] })
})

t.test('a shortfall stays live: the borrower repays it on chain, unreported, and the follower counts it until it is repaid', async (t) => {
  const { advance, afterFail, lender, borrower, operator, holders } = await failAndLiquidate(t, 'job_fail_tokens_shortfall', usdc(10))
  const share = usdc(1) / 10n
  const read = async () => (await operator.get(`/credit/advances/${advance.advanceId}`)).body
  const until = async (what: string, done: (a: { state: string; lenderOwedAtomic: string }) => boolean) => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      const a = await read()
      if (done(a)) return a
    }
    throw new Error(`the follower did not count it within 30 s: ${what}`)
  }
  // What the liquidation left: 31 less what the reserve paid the lender (it holds what earlier tests put in), which
  // the borrower now owes the reserve on top of its share (subrogation). The service says what the contract says.
  const owedOnChain = async () => await new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey)).publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [advance.advanceKey],
  }) as { lenderOwed: bigint; reserveOwed: bigint }
  const left = await owedOnChain()
  t.equal(left.lenderOwed + left.reserveOwed, usdc(31), 'the contract: 31 still owed')
  t.match(await read(), { state: 'shortfall', lenderOwedAtomic: left.lenderOwed.toString(), reserveOwedAtomic: left.reserveOwed.toString() }, 'liquidated, still owed, as on chain')
  const liquidated = await balances(holders)

  // The borrower pays 20 by calling the contract itself; nobody reports it to the service.
  await fund(h.devnet, h.network, borrower.address, usdc(40))
  const chain = new ChainAgent(h.network, borrower)
  await chain.repay(advance.advanceKey, USDC, usdc(20))
  const partly = await until('the first repayment', (a) => a.lenderOwedAtomic === (left.lenderOwed - usdc(20)).toString())
  t.match(partly, { state: 'shortfall', reserveOwedAtomic: left.reserveOwed.toString(), repayments: [{ kind: 'repaid', lenderAmountAtomic: usdc(20).toString() }] })
  const afterFirst = await balances(holders)
  t.equal(afterFirst.lender - liquidated.lender, usdc(20), 'the lender\'s session wallet received it')

  // Then more than is left: the contract takes what is owed (the lender's rest, then the reserve's share), no more.
  await chain.repay(advance.advanceKey, USDC, usdc(15))
  const repaid = await until('the last repayment', (a) => a.state === 'repaid')
  t.match(repaid, { state: 'repaid', lenderOwedAtomic: '0', reserveOwedAtomic: '0' })
  const end = await balances(holders)
  t.equal(end.lender - afterFail.lender, usdc(41) - share, 'in all the lender got its principal + fee - the reserve\'s share')
  t.equal(end.reserve - liquidated.reserve, left.reserveOwed, 'the reserve got its share and what it paid in the liquidation')
  t.equal(afterFirst.borrower - end.borrower, usdc(11), 'the borrower paid only what was owed')
  const onChain = await owedOnChain()
  t.same([onChain.lenderOwed, onChain.reserveOwed], [0n, 0n], 'the contract says nothing is owed either')

  // The service's ledger agrees with the chain: the reserve, and the lender's capital (no loss once repaid).
  const state = await operator.get('/credit/state')
  const reserve = state.body.reserves.find((r: { network: string; asset: string }) => r.network === h.network.slug && r.asset === USDC)
  t.equal(BigInt(reserve?.balanceAtomic ?? 0), end.reserve, 'the service\'s reserve is the contract\'s')
  const recorded = h.app.service.engine.getLender(lender.account.address)
  t.equal(recorded?.lossesAtomic, 0n, 'what came back after the liquidation is no loss')
  t.equal(recorded?.feesEarnedAtomic, usdc(1) - share, 'the lender\'s part of the fee')
  const passport = await operator.get(`/passport/${borrower.address}`)
  t.ok(JSON.stringify(passport.body).includes('advance_repaid'), 'the passport records the advance repaid')
})
