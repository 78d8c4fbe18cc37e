// An outsider's probe (outsider15) of today's two rules together: an advance paid to a supplier the token refuses (its
// principal held for the supplier, the advance born), repaid by the borrower, its job reclaimed by the client (nothing
// owed), then the supplier unblacklisted and its payment claimed by a stranger. Every token goes where it belongs:
// the lender is repaid, the client gets the escrow, the borrower its collateral, the supplier the principal (only it),
// and the service's views and reconciliation agree with the contract at each step.
import t from 'tap'
import { createWalletClient, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fund, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance, until } from './fixtures/api.ts'
import { pastReclaimDelay, sendReclaim } from './fixtures/reclaim.ts'

let h: Harness
t.before(async () => {
  h = await startHarness({ config: { offerTtlSeconds: 3600 } })
})
t.teardown(async () => {
  await h.stop()
})

t.test('a held supplier payment, repaid, reclaimed, then claimed: every token where it belongs, the views agree', async (t) => {
  const deployer = privateKeyToAccount(h.devnet.accounts.deployer.privateKey)
  const chain = new ChainAgent(h.network, deployer)
  const transport = http(h.network.rpcUrl)
  const owner = createWalletClient({ account: deployer, chain: networkChain(h.network), transport })
  const supplier = h.devnet.accounts.supplier.address as Address
  const token = chain.token(USDC)
  const setBlacklisted = async (on: boolean) => {
    const hash = await owner.writeContract({ address: token, abi: testStablecoinAbi, functionName: on ? 'blacklist' : 'unBlacklist', args: [supplier] })
    await chain.publicClient.waitForTransactionReceipt({ hash })
  }
  const heldFor = () => chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, supplier] })
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const jobId = 'job_o15_held_supplier_reclaim'
  const { borrower, borrowerClient, jobClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(300), dueInSeconds: 3600 })
  await fund(h.devnet, h.network, borrower.address, usdc(150))
  const posted = await new ChainAgent(h.network, borrower).postCollateral(jobId, USDC, usdc(50))
  t.equal((await borrowerClient.post(`/credit/jobs/${jobId}/collateral`, { amountAtomic: usdc(50).toString(), txHash: posted })).status, 201)

  const heldBefore = await heldFor()
  const supplierBefore = await chain.balanceOf(USDC, supplier)
  await setBlacklisted(true)
  const advanceId = (await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: jobId, amountAtomic: usdc(40), maximumFeeAtomic: usdc(4) })).advance.advanceId as string
  t.equal(await heldFor(), heldBefore + usdc(40), 'the principal is held for the supplier')
  await until(() => h.app.service.engine.heldPayments([supplier]).some((r) => r.amountAtomic === heldBefore + usdc(40)), 20_000, 'the follower to apply the PaymentHeld')

  // The borrower repays in full; the client reclaims (nothing owed): escrow to the client, collateral to the borrower.
  const lenderBefore = await chain.balanceOf(USDC, lender.session.address)
  const repay = (await borrowerClient.get(`/credit/advances/${advanceId}/repay-transactions`)).body
  await new ChainAgent(h.network, borrower).sendAll(repay.transactions)
  await until(async () => (await borrowerClient.get(`/credit/advances/${advanceId}`)).body.state === 'repaid', 20_000, 'the repayment to be applied')
  t.ok(await chain.balanceOf(USDC, lender.session.address) > lenderBefore, 'the lender was repaid')
  await pastReclaimDelay(h.network, 60)
  const clientAgent = new ChainAgent(h.network, jobClient)
  const borrowerAgent = new ChainAgent(h.network, borrower)
  const [clientBefore, borrowerBefore] = [await clientAgent.balanceOf(USDC, jobClient.address), await borrowerAgent.balanceOf(USDC, borrower.address)]
  t.equal((await sendReclaim(h.network, jobClient, jobId)).status, 'success', 'reclaimed')
  t.equal(await clientAgent.balanceOf(USDC, jobClient.address), clientBefore + usdc(300), 'the client got its escrow')
  t.equal(await borrowerAgent.balanceOf(USDC, borrower.address), borrowerBefore + usdc(50), 'the borrower its collateral')
  t.equal(await heldFor(), heldBefore + usdc(40), 'the supplier\'s principal stays held for it')
  await until(async () => (await borrowerClient.get(`/credit/jobs/${jobId}`)).body.failureReason === 'escrow_reclaimed', 20_000, 'the follower to apply the reclaim')
  await expectReconciled(t, operator, h.network.slug)

  // While the supplier is refused, nobody can claim; once accepted, a stranger's claim pays the supplier only.
  const stranger = await fundedAccount(h.devnet, h.network, 0n)
  const claimer = createWalletClient({ account: stranger, chain: networkChain(h.network), transport })
  const refused = await chain.publicClient
    .simulateContract({ account: stranger, address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'claimHeld', args: [token, supplier] })
    .then(() => 'would succeed', (error: Error) => error.message)
  t.not(refused, 'would succeed', 'no claim while the token refuses the supplier')
  await setBlacklisted(false)
  const claim = await claimer.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'claimHeld', args: [token, supplier] })
  t.equal((await chain.publicClient.waitForTransactionReceipt({ hash: claim })).status, 'success')
  t.equal(await chain.balanceOf(USDC, supplier), supplierBefore + heldBefore + usdc(40), 'the supplier got the principal')
  t.equal(await chain.balanceOf(USDC, stranger.address), 0n, 'the stranger got nothing')
  await until(() => !h.app.service.engine.heldPayments([supplier]).some((r) => r.amountAtomic > 0n), 20_000, 'the follower to apply the claim')
  t.same((await borrowerClient.get(`/credit/held-payments/${supplier}`)).body, [], 'the supplier\'s view is empty')
  await expectReconciled(t, operator, h.network.slug)
})
