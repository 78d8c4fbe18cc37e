// The reconciliation checks the held payments a party's views show (GET /credit/held-payments/{address}, the lender
// wallet's heldPayments, the held_payment event: the engine's records from the chain follower's PaymentHeld and
// HeldPaymentClaimed) against the contract's heldFor: a view that disagrees with the chain is a held_payment
// difference in POST /operator/reconcile and /health (degraded), not silently shown. Here the lender's session wallet
// and the borrower are blacklisted at a completion (the contract holds both payments); the views agree with the chain
// (no difference); then the lender's record is taken out of the data directory, as in one whose follower passed the
// PaymentHeld before this release, and after the restart its view shows nothing while the contract holds 40.9: the
// reconciliation names it. Real anvil, LMDB, HTTP. Fails on 8811308: no such check, the run is ok.
import t from 'tap'
import { createWalletClient, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { ChainAgent } from '../../src/client/index.ts'
import { heldPaymentId } from '../../src/engine/chain-facts.ts'
import { SNAPSHOT_VERSIONS } from '../../src/engine/migrations.ts'
import { Store } from '../../src/store/index.ts'
import { fundedJob, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { fundAdvance, until } from './fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())

type Json = any // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('a held payment the views do not show is a reconciliation difference', async (t) => {
  const deployer = privateKeyToAccount(h.devnet.accounts.deployer.privateKey)
  const chain = new ChainAgent(h.network, deployer)
  const token = chain.token(USDC)
  const owner = createWalletClient({ account: deployer, chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const blacklist = async (account: Address) => {
    const hash = await owner.writeContract({ address: token, abi: testStablecoinAbi, functionName: 'blacklist', args: [account] })
    await chain.publicClient.waitForTransactionReceipt({ hash })
  }
  const heldFor = (holder: Address) => chain.publicClient.readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'heldFor', args: [token, holder] })
  const heldView = async (account: Address) => (await (await fetch(`${h.url}/credit/held-payments/${account}`)).json()) as Json[]
  // Signed in at each run: a restart listens on another port.
  const reconcile = async () => {
    const operator = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.operator.privateKey))
    const reply = await operator.post('/operator/reconcile', { network: h.network.slug })
    t.equal(reply.status, 200)
    return (reply.body as Json).networks[0] as Json
  }

  const lender = await readyLender(h, { minFeeBps: 250, liquidityAtomic: usdc(1000) })
  const { borrower, borrowerClient, jobClientApi } = await fundedJob(h, { jobId: 'job_s14_held', receivableAtomic: usdc(200) })
  await fundAdvance(h, { borrower: borrower.address, borrowerClient, lender, source: 'job_s14_held', amountAtomic: usdc(40), maximumFeeAtomic: usdc(2) })
  await blacklist(lender.session.address)
  await blacklist(borrower.address)
  const completed = await jobClientApi.post('/credit/jobs/job_s14_held/complete', {})
  t.equal(completed.status, 200, 'the completion settles on chain', { body: completed.body })
  t.equal(await heldFor(lender.session.address), 40_900_000n)
  await until(async () => (await heldView(lender.session.address)).length > 0 && (await heldView(borrower.address)).length > 0, 20_000, 'the follower applied both PaymentHeld')

  const agreeing = await reconcile()
  t.equal(agreeing.status, 'ok', 'the views agree with heldFor: no difference', { differences: agreeing.differences })
  t.same(agreeing.heldPayments, [{ asset: token, amountAtomic: '199900000' }], 'heldOf lists both')

  // A data directory whose follower passed the lender's PaymentHeld without recording it (before this release).
  await h.app.stop()
  const store = await Store.open({ dataDir: h.dataDir, snapshotVersions: SNAPSHOT_VERSIONS })
  await store.commit({ changes: [{ kind: 'held', id: heldPaymentId(h.network.slug, token, lender.session.address), record: null, final: false, removed: true }] })
  await store.close()
  await h.restart()
  t.same(await heldView(lender.session.address), [], 'the lender\'s view no longer shows it')

  const differing = await reconcile()
  t.equal(differing.status, 'differences', 'the reconciliation reports the view that disagrees with the chain')
  t.same(differing.differences, [{ network: h.network.slug, asset: token, kind: 'held_payment', key: lender.session.address, expected: '0', actual: '40900000' }], 'one held_payment difference: the recipient, what its view shows, heldFor')
  const health = (await (await fetch(`${h.url}/health`)).json()) as Json
  t.equal(health.status, 'degraded', '/health is degraded')
  t.same(health.networks.find((n: Json) => n.network === h.network.slug).reconciliation.differences.map((d: Json) => d.kind), ['held_payment'], '/health lists it')
})
