// An outsider's probe (outsider19): a lease authorization used on another chain. On the devnet both networks' credit
// contracts sit at the same address and trust the same lease signer, and a lender's session key is one address on
// every network, so what keeps a lease signed for devnet-a from paying on devnet-b is the EIP-712 domain's chain id
// alone. The payer (the session wallet, funded and approved on devnet-b too) and a client that funded the same job key
// on devnet-b (a job's key is one per network, but anyone may fund any key: README, "Decisions beyond DESIGN.md") try
// devnet-a's authorization there: refused
// WrongLeaseSigner, and sent for real it moves nothing and makes no advance; the same terms signed for devnet-b's
// domain would pass (the positive control: nothing else in the call refuses it). Were the chain id out of the
// domain, the lease would pay a second supplier payment on devnet-b, an advance the service never leased (a
// reconciliation difference on that network for good) at the lender's cost. Fails if the lease signer's domain did
// not bind the chain: the simulation of devnet-a's signature on devnet-b would not revert.
import t from 'tap'
import { getAddress, type Hex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { LeaseSigner, type LeaseAuthorization } from '../../src/chain/lease-authorization.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fund, fundedAccount, fundedJob, USDC, usdc } from '../fixtures/service.ts'
import { actionFor, type Json } from './fixtures/api.ts'
import { lenderHarness } from './fixtures/lender-harness.ts'

t.test('a lease authorization of one chain pays nothing on another, where the contract and its signer are the same', async (t) => {
  const { h, lender } = await lenderHarness(t, {}, { minFeeBps: 300, liquidityAtomic: usdc(1000) })
  const a = h.network
  const b = h.devnet.networks[1] as NetworkConfig
  const session = lender.session
  const read = (network: NetworkConfig, functionName: 'leaseSigner') =>
    new ChainAgent(network, session).publicClient.readContract({ address: network.creditContract, abi: creditFacilityV2Abi, functionName })
  t.equal(b.creditContract, a.creditContract, 'the same contract address on both chains')
  t.equal(await read(b, 'leaseSigner'), await read(a, 'leaseSigner'), 'the same lease signer')
  t.not(b.chainId, a.chainId)

  // A lease on devnet-a, not paid there.
  const jobId = 'job_o19_other_chain'
  const { borrower, borrowerClient } = await fundedJob(h, { jobId, receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, jobId, usdc(100), usdc(10)))
  t.equal(decision.body.decision, 'approved')
  const offerId = decision.body.offer.offerId as string
  t.equal((await borrowerClient.post('/credit/match', { offerId })).body.lease?.lender, lender.account.address)
  const action = await actionFor(lender, offerId)
  const wire = action['authorization'] as Json
  const terms: LeaseAuthorization = {
    offerKey: wire['offerKey'], jobKey: wire['jobKey'], payer: wire['payer'], supplier: wire['supplier'], asset: wire['asset'],
    amount: BigInt(wire['amount']), fee: BigInt(wire['fee']), reserveShare: BigInt(wire['reserveShare']), deadline: BigInt(wire['deadline']), dueAt: BigInt(wire['dueAt']),
  }
  t.equal(getAddress(terms.payer), session.address)

  // On devnet-b: the job's devnet-a key (the one the authorization names) funded by a client there (same token
  // address, same borrower), the session wallet funded and approved.
  const onB = new ChainAgent(b, session)
  t.equal(onB.token(USDC), getAddress(terms.asset), 'the token too sits at the same address')
  const client = await fundedAccount(h.devnet, b, usdc(1000))
  await new ChainAgent(b, client).fundJob(jobId, USDC, usdc(1000), borrower.address, terms.jobKey)
  await fund(h.devnet, b, session.address, usdc(200))
  await onB.approveCredit(USDC, usdc(200))
  const simulate = (signature: Hex) =>
    onB.publicClient.simulateContract({ account: session.address, address: b.creditContract, abi: creditFacilityV2Abi, functionName: 'paySupplier', args: [terms, signature] })

  await t.rejects(simulate(action['signature'] as Hex), /WrongLeaseSigner/, 'devnet-a\'s signature is refused on devnet-b')
  const forB = new LeaseSigner({ privateKey: h.devnet.accounts.leaseSigner.privateKey, chainId: b.chainId, verifyingContract: b.creditContract })
  await t.resolves(simulate(forB.sign(terms)), 'the control: the same terms signed for devnet-b\'s domain would pay there')

  // Sent for real on devnet-b (the lender's own transaction, its chain id changed): reverted, nothing moved, no advance.
  const supplierBefore = await onB.balanceOf(USDC, getAddress(terms.supplier))
  const sessionBefore = await onB.balanceOf(USDC, session.address)
  await t.rejects(onB.sendUnsigned({ ...action['transaction'], chainId: b.chainId, gas: '400000' }), /reverted/)
  t.equal(await onB.balanceOf(USDC, getAddress(terms.supplier)), supplierBefore, 'the supplier got nothing on devnet-b')
  t.equal(await onB.balanceOf(USDC, session.address), sessionBefore, 'the session wallet paid nothing there')
  const onChainB = await onB.publicClient.readContract({ address: b.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [terms.offerKey] })
  t.equal(onChainB.exists, false, 'no advance on devnet-b')

  // On devnet-a the lease pays as delivered, and is funded there.
  const paying = await new ChainAgent(a, session).sendUnsigned(action['transaction'])
  const paid = await lender.client.post(`/credit/offers/${offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paying })
  t.equal(paid.status, 200)
  t.equal(paid.body.network, a.slug)
})
