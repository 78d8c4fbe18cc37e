// A lender whose session wallet the token refuses (USDC's blacklist) over HTTP against the devnet: the job's completion
// still settles on chain (before held payments the contract's settleJob reverted for the whole job, and the completion
// failed for good), the advance is repaid in the service's ledger, what the lender is owed waits in the contract for it
// (heldFor), the reconciliation finds the ledger equal to the chain (the held payment counted in the contract's token
// conservation), and once the token accepts the wallet again anyone's claimHeld delivers it.
import t from 'tap'
import { createWalletClient, erc20Abi, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { fundedJob, readyLender, signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { expectReconciled, fundAdvance } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

t.test('a blacklisted session wallet: the job still completes, the lender\'s part is held for it and claimed later', async (t) => {
  const chain = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.deployer.privateKey))
  const token = chain.token(USDC)
  const owner = createWalletClient({ account: privateKeyToAccount(h.devnet.accounts.deployer.privateKey), chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const setBlacklisted = async (account: Address, on: boolean) => {
    const hash = await owner.writeContract({ address: token, abi: testStablecoinAbi, functionName: on ? 'blacklist' : 'unBlacklist', args: [account] })
    await chain.publicClient.waitForTransactionReceipt({ hash })
  }
  const balance = (holder: Address) => chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
  const heldFor = (holder: Address) => chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, holder] })

  const lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_held_payment', receivableAtomic: usdc(200) })
  const { advance } = await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_held_payment', amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  await setBlacklisted(lender.session.address, true)
  const sessionBefore = await balance(lender.session.address)
  const borrowerBefore = await balance(borrower.address)

  const completed = await jobClientApi.post('/credit/jobs/job_held_payment/complete', {})
  t.equal(completed.status, 200, 'the completion settles on chain', { body: completed.body })
  t.equal((await borrowerClient.get(`/credit/advances/${advance.advanceId}`)).body.state, 'repaid', 'the advance is repaid in the ledger')
  // Fee 1 at 250 bps, reserve share 0.1: the lender is owed 40.9, the borrower gets 200 - 41.
  t.equal(await heldFor(lender.session.address), 40_900_000n, 'the lender\'s part waits in the contract for its session wallet')
  t.equal(await balance(lender.session.address), sessionBefore, 'nothing reached the refused wallet')
  t.equal((await balance(borrower.address)) - borrowerBefore, usdc(159), 'the borrower was paid at once: one refused recipient holds up nobody else')
  const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
  await expectReconciled(t, operator, h.network.slug)
  const reconciled = await operator.post('/operator/reconcile', { network: h.network.slug })
  t.same(reconciled.body.networks[0].unaccountedTokens, [], 'the held payment is accounted for: the contract\'s heldOf counts in its token conservation')
  t.same(reconciled.body.networks[0].heldPayments, [{ asset: token, amountAtomic: '40900000' }], 'the operator sees what the contract holds for refused recipients')

  await setBlacklisted(lender.session.address, false)
  const claim = await owner.writeContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'claimHeld', args: [token, lender.session.address] })
  await chain.publicClient.waitForTransactionReceipt({ hash: claim })
  t.equal((await balance(lender.session.address)) - sessionBefore, 40_900_000n, 'claimed by anyone, delivered to the session wallet')
  t.equal(await heldFor(lender.session.address), 0n)
  await expectReconciled(t, operator, h.network.slug)
  t.same((await operator.post('/operator/reconcile', { network: h.network.slug })).body.networks[0].heldPayments, [], 'none once claimed')
})
