// A party's own views show what the credit contract holds for it (heldviews12), over HTTP against the devnet: the
// lender's session wallet and the borrower are both on the token's blacklist when the job completes, so the contract
// holds the lender's repayment and the borrower's remainder (PaymentHeld). GET /lenders/{address}/wallet and
// GET /credit/held-payments/{address} show each amount, equal to the contract's heldFor, with the unsigned claimHeld;
// the event stream tells the lender and the borrower; the SDK sends the claim from a stranger's wallet once the token
// accepts the session wallet, and the views follow the claim (the lender's entry leaves, the borrower's, still
// refused, stays, and its claim reverts); a restart keeps what is held. Before heldviews12 the views had no
// heldPayments, the route did not exist and the stream said nothing.
import t from 'tap'
import { createWalletClient, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { gasLimitsV2 } from '../../src/chain/transactions-v2.ts'
import { AgentCredit, ChainAgent, type StreamEvent } from '../../src/client/index.ts'
import { fundedJob, readyLender, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

const getJson = async (path: string) => {
  const reply = await fetch(`${h.url}${path}`)
  return { status: reply.status, body: (await reply.json()) as any }
}

t.test('held payments in the lender\'s wallet view, the account\'s own route and the stream, following the claim', async (t) => {
  const deployer = privateKeyToAccount(h.devnet.accounts.deployer.privateKey)
  const chain = new ChainAgent(h.network, deployer)
  const token = chain.token(USDC)
  const owner = createWalletClient({ account: deployer, chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const setBlacklisted = async (account: Address, on: boolean) => {
    const hash = await owner.writeContract({ address: token, abi: testStablecoinAbi, functionName: on ? 'blacklist' : 'unBlacklist', args: [account] })
    await chain.publicClient.waitForTransactionReceipt({ hash })
  }
  const heldFor = (holder: Address) => chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, holder] })

  const lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_held_views', receivableAtomic: usdc(200) })
  await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_held_views', amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  const wallet = async () => (await getJson(`/lenders/${lender.account.address}/wallet`)).body
  t.same((await wallet()).heldPayments, [], 'nothing held before')
  t.same((await getJson(`/credit/held-payments/${borrower.address}`)).body, [], 'an account with nothing held has an empty list, not a 404')

  const lenderSdk = new AgentCredit({ baseUrl: h.url, account: lender.account })
  const borrowerSdk = new AgentCredit({ baseUrl: h.url, account: borrower })
  const lenderEvents = await lenderSdk.events()
  const borrowerEvents = await borrowerSdk.events()
  const isHeld = (amount: string) => (e: StreamEvent) => e.kind === 'held_payment' && e.heldPayment.amountAtomic === amount
  const lenderHeard = lenderEvents.next(isHeld('40900000'), 30_000)
  const borrowerHeard = borrowerEvents.next(isHeld('159000000'), 30_000)

  await setBlacklisted(lender.session.address, true)
  await setBlacklisted(borrower.address, true)
  const completed = await jobClientApi.post('/credit/jobs/job_held_views/complete', {})
  t.equal(completed.status, 200, 'the completion settles on chain', { body: completed.body })
  // Fee 1 at 250 bps, reserve share 0.1: the lender is owed 40.9, the borrower 200 - 41.
  t.equal(await heldFor(lender.session.address), 40_900_000n)
  t.equal(await heldFor(borrower.address), 159_000_000n)

  // The follower applies the PaymentHeld events at the network's confirmations: wait for it, then compare.
  await until(async () => (await wallet()).heldPayments.length > 0, 20_000, 'the lender\'s held payment in its wallet view')
  const [held] = (await wallet()).heldPayments
  t.match(held, {
    account: lender.session.address, lender: lender.account.address, network: h.network.slug, asset: USDC, token,
    amountAtomic: (await heldFor(lender.session.address)).toString(),
    claim: { network: h.network.slug, chainId: h.network.chainId, from: lender.session.address, to: h.network.creditContract, value: '0' },
  }, 'the wallet view shows what the contract holds for the session wallet, with the claimHeld to send')
  t.same((await getJson(`/credit/held-payments/${lender.session.address}`)).body, [held], 'the session wallet\'s own route shows the same')
  await until(async () => (await getJson(`/credit/held-payments/${borrower.address}`)).body.length > 0, 20_000, 'the borrower\'s held payment')
  const borrowerHeld = (await getJson(`/credit/held-payments/${borrower.address.toLowerCase()}`)).body
  t.match(borrowerHeld, [{ account: borrower.address, lender: null, amountAtomic: (await heldFor(borrower.address)).toString() }], 'the borrower sees its remainder held (address in any case)')
  t.same(await borrowerSdk.heldPayments(borrower.address), borrowerHeld, 'the SDK reads the same')

  const lenderEvent = await lenderHeard
  t.same(lenderEvent.kind === 'held_payment' && lenderEvent.heldPayment, held, 'the lender hears of its session wallet\'s held payment on the stream, as the view shows it')
  const borrowerEvent = await borrowerHeard
  t.same(borrowerEvent.kind === 'held_payment' && borrowerEvent.heldPayment, borrowerHeld[0], 'the borrower hears of its own')

  // Still refused: the claim reverts and nothing changes.
  const stranger = new ChainAgent(h.network, privateKeyToAccount(h.devnet.accounts.jobClient.privateKey))
  await t.rejects(borrowerSdk.claimHeld(stranger, borrowerHeld[0]), /reverted/, 'the borrower\'s claim reverts while the token refuses it')

  // Accepted again: anyone sends the claim the view handed out; the view follows the chain.
  const claimed = lenderEvents.next(isHeld('0'), 30_000)
  await setBlacklisted(lender.session.address, false)
  const claimHash = await lenderSdk.claimHeld(stranger, held)
  const receipt = await chain.publicClient.getTransactionReceipt({ hash: claimHash })
  t.ok(receipt.gasUsed < gasLimitsV2.claimHeld, `claimHeld used ${receipt.gasUsed} gas, under its limit ${gasLimitsV2.claimHeld}`)
  t.equal(await heldFor(lender.session.address), 0n, 'the contract paid the session wallet')
  await until(async () => (await wallet()).heldPayments.length === 0, 20_000, 'the claim in the wallet view')
  t.same((await getJson(`/credit/held-payments/${lender.session.address}`)).body, [], 'nothing held for the session wallet once claimed')
  const claimEvent = await claimed
  t.equal(claimEvent.kind === 'held_payment' && claimEvent.heldPayment.amountAtomic, '0', 'the stream tells the lender of the claim')
  t.same((await getJson(`/credit/held-payments/${borrower.address}`)).body, borrowerHeld, 'the borrower\'s payment still waits')
  lenderEvents.close()
  borrowerEvents.close()

  // The record is the engine's: a restart shows the same.
  await h.restart()
  t.same((await getJson(`/credit/held-payments/${borrower.address}`)).body, borrowerHeld, 'kept across a restart')
  t.same((await wallet()).heldPayments, [], 'the claimed one stays claimed after a restart')
})
