// Issue 10, hole 1 over HTTP and against the contract: principal moves only under the service's lease authorization.
// A stranger calling paySupplier directly cannot pay (or block) any offer, whatever key it tries: the offer key is
// salted per data directory (not derivable from the offer id) and the contract checks the lease signer's signature
// over every term. And the terms the lender receives on the wire are exactly what the contract records once paid.
import t from 'tap'
import { decodeEventLog, encodeFunctionData, getAddress, keccak256, toBytes, toHex, type Hash, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { idKey, jobKey, offerKey } from '../../src/chain/ids.ts'
import { ChainAgent } from '../../src/client/chain.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'
import { actionFor, type Json } from './fixtures/api.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

/** The authorization as the contract takes it (the wire carries amounts as decimal strings). */
function onChainTerms(a: Json) {
  return {
    offerKey: a['offerKey'] as Hex, jobKey: a['jobKey'] as Hex, payer: a['payer'] as Hex, supplier: a['supplier'] as Hex, asset: a['asset'] as Hex,
    amount: BigInt(a['amount']), fee: BigInt(a['fee']), reserveShare: BigInt(a['reserveShare']), deadline: BigInt(a['deadline']), dueAt: BigInt(a['dueAt']),
  }
}

t.test('a stranger cannot pay any offer directly; the wire terms are what the contract records', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 300, liquidityAtomic: usdc(2000) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_auth_1', receivableAtomic: usdc(1000) })
  const decision = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_auth_1', usdc(400), usdc(40)))
  t.equal(decision.body.decision, 'approved', JSON.stringify(decision.body))
  const offer = decision.body.offer
  const match = await borrowerClient.post('/credit/match', { offerId: offer.offerId })
  t.equal(match.body.lease?.lender, lender.account.address)
  t.notOk('authorization' in match.body.lease, 'the borrower is not handed the lender\'s authorization')

  // The key: salted per data directory, not a function of the id alone.
  t.match(offer.offerKey, /^0x[0-9a-f]{64}$/)
  t.not(offer.offerKey, idKey(offer.offerId), 'not keccak256(offerId)')
  t.not(offer.offerKey, offerKey(toHex(new Uint8Array(32)), offer.offerId), 'not the zero-salt key')
  t.not(offer.offerKey, keccak256(toBytes(offer.offerId)), 'not derivable from the id')

  const action = await actionFor(lender, offer.offerId)
  const a = onChainTerms(action['authorization'])
  t.equal(a.offerKey, offer.offerKey, 'the authorization is for the offer\'s key')
  t.equal(a.jobKey, jobKey(h.network, 'job_auth_1'))
  t.equal(getAddress(a.payer), lender.session.address, 'only the session key may pay')
  t.equal(getAddress(a.supplier), getAddress(offer.supplierAddress))

  // A stranger with gas and tokens tries every door of the contract.
  const stranger = await fundedAccount(h.devnet, h.network, usdc(1000))
  const strangerChain = new ChainAgent(h.network, stranger)
  await strangerChain.approveCredit(USDC, usdc(1000))
  const simulate = (from: Hex, terms: ReturnType<typeof onChainTerms>, signature: Hex) =>
    strangerChain.publicClient.simulateContract({
      account: from, address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'paySupplier', args: [terms, signature],
    })
  const strangerSelf = { ...a, payer: stranger.address, supplier: stranger.address === a.supplier ? a.payer : h.devnet.accounts.jobClient.address as Hex }
  await t.rejects(simulate(stranger.address, a, action['signature']), /NotPayer/, 'the lender\'s own authorization, sent by a stranger')
  await t.rejects(simulate(stranger.address, strangerSelf, action['signature']), /WrongLeaseSigner/, 'the same signature over the stranger\'s terms')
  const selfSigned = await stranger.signTypedData({
    domain: { name: 'CreditFacility', version: '2', chainId: h.network.chainId, verifyingContract: h.network.creditContract },
    types: {
      LeaseAuthorization: [
        { name: 'offerKey', type: 'bytes32' }, { name: 'jobKey', type: 'bytes32' }, { name: 'payer', type: 'address' }, { name: 'supplier', type: 'address' },
        { name: 'asset', type: 'address' }, { name: 'amount', type: 'uint256' }, { name: 'fee', type: 'uint256' }, { name: 'reserveShare', type: 'uint256' },
        { name: 'deadline', type: 'uint256' }, { name: 'dueAt', type: 'uint256' },
      ],
    },
    primaryType: 'LeaseAuthorization',
    message: strangerSelf,
  })
  await t.rejects(simulate(stranger.address, strangerSelf, selfSigned), /WrongLeaseSigner/, 'a stranger\'s own signature over the live offer\'s key')
  for (const key of [idKey(offer.offerId), idKey('off_1'), offerKey(toHex(new Uint8Array(32)), offer.offerId)]) {
    const guessed = { ...strangerSelf, offerKey: key }
    await t.rejects(simulate(stranger.address, guessed, selfSigned), /WrongLeaseSigner/, `a guessed key ${key.slice(0, 10)}… self-signed`)
    await t.rejects(simulate(stranger.address, guessed, action['signature']), /WrongLeaseSigner/, `a guessed key ${key.slice(0, 10)}… under the service's signature`)
  }
  // Sent for real (no simulation), the stranger's attempt lands on chain reverted and moves nothing.
  const supplierBefore = await strangerChain.balanceOf(USDC, h.devnet.accounts.jobClient.address)
  const data = encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'paySupplier', args: [strangerSelf, selfSigned] })
  await t.rejects(strangerChain.sendUnsigned({ chainId: h.network.chainId, to: h.network.creditContract, data, value: '0', gas: '400000' }), /reverted/)
  t.equal(await strangerChain.balanceOf(USDC, h.devnet.accounts.jobClient.address), supplierBefore, 'nothing moved')

  // The lender pays as delivered: the contract records exactly the wire's terms.
  const paid: Hash = await new ChainAgent(h.network, lender.session).sendUnsigned(action['transaction'])
  const report = await lender.client.post(`/credit/offers/${offer.offerId}/supplier-payment`, { lender: lender.account.address, supplierPaymentId: paid })
  t.equal(report.status, 200, JSON.stringify(report.body))
  t.equal(report.body.advanceKey, offer.offerKey, 'the advance carries its offer\'s key')
  const recorded = (await strangerChain.publicClient.readContract({
    address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'getAdvance', args: [a.offerKey],
  })) as { jobKey: Hex; lender: Hex; asset: Hex; dueAt: bigint; lenderOwed: bigint; reserveOwed: bigint; liquidated: boolean; exists: boolean }
  t.same(
    { jobKey: recorded.jobKey, lender: getAddress(recorded.lender), asset: getAddress(recorded.asset), dueAt: recorded.dueAt, lenderOwed: recorded.lenderOwed, reserveOwed: recorded.reserveOwed },
    { jobKey: a.jobKey, lender: getAddress(a.payer), asset: getAddress(a.asset), dueAt: a.dueAt, lenderOwed: a.amount + a.fee - a.reserveShare, reserveOwed: a.reserveShare },
    'getAdvance: the wire\'s terms',
  )
  const receipt = await strangerChain.publicClient.getTransactionReceipt({ hash: paid })
  const event = receipt.logs
    .filter((log) => getAddress(log.address) === getAddress(h.network.creditContract))
    .map((log) => decodeEventLog({ abi: creditFacilityV2Abi, data: log.data, topics: log.topics }))
    .find((e) => e.eventName === 'SupplierPaid')
  t.ok(event, 'SupplierPaid emitted')
  const args = event?.args as Record<string, unknown>
  t.same(
    { offerKey: args['offerKey'], payer: getAddress(args['payer'] as Hex), supplier: getAddress(args['supplier'] as Hex), jobKey: args['jobKey'], amount: args['amount'], fee: args['fee'], reserveShare: args['reserveShare'], dueAt: args['dueAt'] },
    { offerKey: a.offerKey, payer: getAddress(a.payer), supplier: getAddress(a.supplier), jobKey: a.jobKey, amount: a.amount, fee: a.fee, reserveShare: a.reserveShare, dueAt: a.dueAt },
    'SupplierPaid: the wire\'s terms',
  )
  t.equal(a.amount, BigInt(report.body.principalAtomic), 'the advance\'s principal is the authorized amount')
  t.equal(a.fee, BigInt(match.body.lease.feeAtomic), 'the fee is the lease\'s')

  // Paid once: the same authorization cannot pay again, not even by its payer.
  await t.rejects(
    new ChainAgent(h.network, lender.session).publicClient.simulateContract({
      account: lender.session.address, address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'paySupplier', args: [a, action['signature']],
    }),
    /OfferAlreadyPaid/,
    'a second payment of the offer',
  )
  t.same((await lender.client.get(`/lenders/${lender.account.address}/actions`)).body, [], 'no action left once paid')
  t.same((await borrowerClient.get(`/lenders/${lender.account.address}/actions`)).status, 403, 'never delivered to anyone but the lender')
})
