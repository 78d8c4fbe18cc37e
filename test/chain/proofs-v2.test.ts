// Proofs against CreditFacilityV2: a reported transaction gives the same facts (same decoding, same proof keys) as the
// chain follower; a Repaid of any amount is a valid fact; the verdicts for unknown, reverted, foreign and too recent
// transactions.
import t from 'tap'
import { erc20Abi, zeroHash, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createNetworkClients } from '../../src/chain/clients.ts'
import { ChainFollower, type FollowedEvent } from '../../src/chain/follower.ts'
import { legacyJobKey as jobKeyOf, newKeySalt, offerKey as offerKeyOf } from '../../src/chain/ids.ts'
import { readFacilityReceipt, verifyFacilityEvent } from '../../src/chain/proofs-v2.ts'
import { setupFacilityV2, USDC, type V2Fixture } from './fixtures/facility-v2.ts'

let f: V2Fixture

t.before(async () => {
  f = await setupFacilityV2(t)
})

t.test('a reported transaction proves the same facts the follower delivers', async (t) => {
  const clients = createNetworkClients(f.network)
  const client = await f.wallet(500n * USDC)
  const borrower = await f.wallet(500n * USDC)
  const lender = await f.wallet(1_000n * USDC)
  const jobKey = jobKeyOf('job_proofs_v2')
  const fundHash = await f.call(client, 'fundJob', [jobKey, f.token, 500n * USDC, borrower.account.address])
  const now = await f.chainNow()
  const a = {
    offerKey: offerKeyOf(newKeySalt(), 'off_1'), jobKey, payer: lender.account.address, supplier: privateKeyToAccount(generatePrivateKey()).address,
    asset: f.token, amount: 100n * USDC, fee: 10n * USDC, reserveShare: 1n * USDC, deadline: now + 600n, dueAt: now + 3_600n,
  }
  const payHash = await f.call(lender, 'paySupplier', [a, f.authorize(a)])
  // Principal only, then one unit: both are real repayments, of amounts nobody expected (issue 9, case 4).
  const repayHash = await f.call(borrower, 'repay', [a.offerKey, 100n * USDC])
  const tinyHash = await f.call(borrower, 'repay', [a.offerKey, 1n])

  const repaid = await verifyFacilityEvent(clients, f.facility, { txHash: repayHash, eventName: 'Repaid', args: { offerKey: a.offerKey } })
  t.ok(repaid.ok, 'a principal-only repayment is a valid proof')
  if (!repaid.ok) return
  const [fact] = repaid.value
  t.equal(fact?.args.toLender, 100n * USDC, 'the amount is read from the event')
  t.equal(fact?.args.lenderOwed, 9n * USDC, 'and what is still owed')
  t.equal(fact?.proofKey, `${f.network.slug}:${repayHash.toLowerCase()}:${fact?.logIndex}`, 'keyed network:txHash:logIndex')
  const tiny = await verifyFacilityEvent(clients, f.facility, { txHash: tinyHash, eventName: 'Repaid', args: { offerKey: a.offerKey } })
  t.ok(tiny.ok && tiny.value[0]?.args.toLender === 1n, 'a one-unit repayment is a valid proof too')

  const wrongKey = await verifyFacilityEvent(clients, f.facility, { txHash: repayHash, eventName: 'Repaid', args: { offerKey: zeroHash } })
  t.match(wrongKey, { ok: false, reason: 'wrong_arguments' }, 'another advance\'s key is refused')
  const wrongEvent = await verifyFacilityEvent(clients, f.facility, { txHash: repayHash, eventName: 'SupplierPaid' })
  t.match(wrongEvent, { ok: false, reason: 'wrong_arguments' }, 'a transaction without the event is refused')

  // The follower reads the same blocks: every fact of the receipts must be one of its events, equal field by field.
  const followed: FollowedEvent[] = []
  const head = await f.publicClient.getBlockNumber()
  const follower = new ChainFollower({
    network: f.network, contract: f.facility, cursor: undefined, pollIntervalMs: 20, chainTimeIntervalMs: 0,
    consume: async (batch) => {
      followed.push(...batch.events)
    },
  })
  // Stopped when the test ends at the latest: a follower that never reaches the head (stopped by a fatal error) must
  // not poll past the test, its wait ended by tap's timeout.
  t.teardown(() => follower.stop())
  follower.start()
  while ((follower.cursor?.blockNumber ?? -1n) < head) {
    if (follower.fatal !== undefined) throw follower.fatal
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await follower.stop()
  for (const hash of [fundHash, payHash, repayHash, tinyHash]) {
    const read = await readFacilityReceipt(clients, f.facility, { txHash: hash })
    t.ok(read.ok, `receipt ${hash.slice(0, 10)} reads`)
    if (!read.ok) continue
    for (const proven of read.value.facts) {
      const { network, proofKey, ...event } = proven
      const same = followed.find((e) => e.txHash === event.txHash && e.logIndex === event.logIndex)
      t.same(same, event, `${proven.name} (${proofKey}) is the follower's event`)
      t.equal(network, f.network.slug)
    }
  }
  t.same(
    followed.map((e) => e.name),
    ['JobFunded', 'SupplierPaid', 'Repaid', 'Repaid'],
    'the follower saw exactly these events',
  )
})

t.test('verdicts', async (t) => {
  const clients = createNetworkClients(f.network)
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: `0x${'ab'.repeat(32)}` }), { ok: false, reason: 'not_found' })
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: '0x1234' }), { ok: false, reason: 'not_found' })

  const holder = await f.wallet(10n * USDC)
  const transfer = await holder.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'transfer', args: [f.facility, 1n] })
  await f.publicClient.waitForTransactionReceipt({ hash: transfer })
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: transfer }), { ok: false, reason: 'wrong_contract' }, 'a token transfer proves nothing')

  const reverted: Hex = await holder.wallet.writeContract({
    address: f.facility, abi: (await import('../../src/chain/artifacts.ts')).creditFacilityV2Abi, functionName: 'repay', args: [zeroHash, 1n], gas: 200_000n,
  })
  await f.publicClient.waitForTransactionReceipt({ hash: reverted })
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: reverted }), { ok: false, reason: 'reverted' })

  const client = await f.wallet(10n * USDC)
  const fund = await f.call(client, 'fundJob', [jobKeyOf('job_confirmations'), f.token, 10n * USDC, client.account.address])
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: fund, confirmations: 3 }), { ok: false, reason: 'too_few_confirmations' })
  await f.testClient.mine({ blocks: 2 })
  t.match(await readFacilityReceipt(clients, f.facility, { txHash: fund, confirmations: 3 }), { ok: true }, 'enough once two more blocks are mined')
})
