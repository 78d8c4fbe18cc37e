// Proof verification against anvil: a verified fact, and each typed failure reason.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { erc20Abi, keccak256, stringToBytes, type Hex } from 'viem'
import { creditFacilityAbi, loadArtifact } from '../../src/chain/artifacts.ts'
import { idKey } from '../../src/chain/ids.ts'
import { verifyProof, verifySupplierPayment } from '../../src/chain/proofs.ts'
import { buildPaySupplierTransaction } from '../../src/chain/transactions.ts'
import { LmdbUsedProofs, proofKey } from '../../src/chain/used-proofs.ts'
import { newSessionKey } from '../../src/service/session-keys.ts'
import { setupDevnet, USDC } from './fixtures/devnet.ts'

t.test('proof verification', async (t) => {
  const f = await setupDevnet(t)
  const { accounts, network } = f
  const dir = mkdtempSync(join(tmpdir(), 'used-proofs-'))
  const used = new LmdbUsedProofs(join(dir, 'db'))
  t.teardown(async () => {
    await used.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const supplier = accounts.supplier.address
  const { privateKey, sessionKey } = newSessionKey(accounts.lender.address, [network], { [network.slug]: 'USDC' }, 1_000n * USDC, Date.now())
  const payer = sessionKey.address
  await f.fundGas(payer)
  await f.transfer(f.actor('lender'), payer, 500n * USDC)
  await f.waitSuccess(await f.signAndSend(privateKey, sessionKey.setupTransactions[0] as never))

  const lease = { offerId: 'off_proof', payer, supplier, asset: 'USDC', amountAtomic: 42n * USDC + 7n }
  const payHash = await f.signAndSend(privateKey, buildPaySupplierTransaction(network, { ...lease, expiresAtMs: Date.now() + 60_000 }))
  await f.waitSuccess(payHash)

  t.test('wrong_arguments: a payment to another supplier or of another amount than the lease asked', async (t) => {
    const otherSupplier = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash, supplier: accounts.borrower.address })
    t.equal(otherSupplier.ok ? 'ok' : otherSupplier.reason, 'wrong_arguments', 'different supplier')
    t.match(otherSupplier.ok ? '' : otherSupplier.detail, /supplier/)
    const otherAmount = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash, amountAtomic: 42n * USDC })
    t.equal(otherAmount.ok ? 'ok' : otherAmount.reason, 'wrong_arguments', 'different amount')
    t.match(otherAmount.ok ? '' : otherAmount.detail, /amount: expected 42000000, got 42000007/)
    const otherOffer = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash, offerId: 'off_other' })
    t.equal(otherOffer.ok ? 'ok' : otherOffer.reason, 'wrong_arguments', 'different offer')
    const otherEvent = await verifyProof(f.clients, used, { txHash: payHash, eventName: 'Repaid', args: {} })
    t.equal(otherEvent.ok ? 'ok' : otherEvent.reason, 'wrong_arguments', 'the transaction emitted another event')
  })

  t.test('too_few_confirmations', async (t) => {
    const result = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash, confirmations: 1_000 })
    t.equal(result.ok ? 'ok' : result.reason, 'too_few_confirmations')
    t.notOk(used.has(proofKey(network.slug, payHash, 0)), 'a refused proof is not consumed')
  })

  t.test('verified fact, then already_used on replay', async (t) => {
    const result = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash })
    if (!result.ok) throw new Error(`expected a fact, got ${result.reason}: ${result.detail}`)
    const receipt = await f.clients.publicClient.getTransactionReceipt({ hash: payHash })
    const log = receipt.logs.find((l) => l.address.toLowerCase() === network.creditContract.toLowerCase())
    t.strictSame(result.fact, {
      network: network.slug,
      txHash: payHash,
      logIndex: log?.logIndex,
      offerId: 'off_proof',
      payer,
      supplier,
      asset: 'USDC',
      amountAtomic: 42n * USDC + 7n,
      proofKey: `${network.slug}:${payHash}:${log?.logIndex}`,
    })
    t.ok(used.has(result.fact.proofKey), 'recorded as used')
    const replay = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash })
    t.equal(replay.ok ? 'ok' : replay.reason, 'already_used', 'the same hash cannot be used twice')
    const upper = await verifySupplierPayment(f.clients, used, { ...lease, txHash: payHash.toUpperCase().replace('0X', '0x') })
    t.equal(upper.ok ? 'ok' : upper.reason, 'already_used', 'nor in another letter case')
  })

  t.test('generic proof: fact fields include block and decoded args', async (t) => {
    const borrower = f.actor('borrower')
    await f.approve(borrower, 10n * USDC)
    const hash = await f.call(borrower, 'repay', [idKey('adv_p'), accounts.lender.address, f.token, 10n * USDC, 1n * USDC])
    const result = await verifyProof(f.clients, used, {
      txHash: hash,
      eventName: 'Repaid',
      args: { advanceKey: idKey('adv_p'), lender: accounts.lender.address.toLowerCase() as Hex, amount: 10n * USDC },
      consume: false,
    })
    if (!result.ok) throw new Error(`expected a fact, got ${result.reason}`)
    const receipt = await f.clients.publicClient.getTransactionReceipt({ hash })
    t.equal(result.fact.blockNumber, receipt.blockNumber)
    t.equal(result.fact.from, accounts.borrower.address)
    t.strictSame(result.fact.args, {
      advanceKey: idKey('adv_p'),
      lender: accounts.lender.address,
      payer: accounts.borrower.address,
      asset: f.token,
      amount: 10n * USDC,
      reserveAmount: 1n * USDC,
    })
    t.notOk(used.has(result.fact.proofKey), 'consume: false leaves recording to the caller')
  })

  t.test('not_found', async (t) => {
    const unknown = keccak256(stringToBytes('no such transaction'))
    const result = await verifySupplierPayment(f.clients, used, { ...lease, txHash: unknown })
    t.equal(result.ok ? 'ok' : result.reason, 'not_found')
    const malformed = await verifySupplierPayment(f.clients, used, { ...lease, txHash: '0x1234' })
    t.equal(malformed.ok ? 'ok' : malformed.reason, 'not_found', 'a malformed hash is not found')
  })

  t.test('reverted', async (t) => {
    const late = buildPaySupplierTransaction(network, { ...lease, offerId: 'off_late', expiresAtMs: Date.now() - 120_000 })
    const hash = await f.signAndSend(privateKey, late)
    const result = await verifySupplierPayment(f.clients, used, { ...lease, offerId: 'off_late', txHash: hash })
    t.equal(result.ok ? 'ok' : result.reason, 'reverted')
  })

  t.test('wrong_contract', async (t) => {
    // A plain token transfer to the supplier is not a paySupplier.
    const lender = f.actor('lender')
    const transferHash = await lender.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'transfer', args: [supplier, 1n] })
    await f.waitSuccess(transferHash)
    const transfer = await verifySupplierPayment(f.clients, used, { ...lease, payer: accounts.lender.address, amountAtomic: 1n, txHash: transferHash })
    t.equal(transfer.ok ? 'ok' : transfer.reason, 'wrong_contract', 'a token transfer')

    // The same event from another deployment of the contract (same code, another address).
    const deployHash = await lender.wallet.deployContract({
      abi: creditFacilityAbi,
      bytecode: loadArtifact('CreditFacility').bytecode,
      args: [accounts.operator.address],
    })
    const deployed = await f.clients.publicClient.waitForTransactionReceipt({ hash: deployHash, pollingInterval: 50 })
    const impostor = deployed.contractAddress as Hex
    await f.approve(lender, 0n)
    await f.waitSuccess(await lender.wallet.writeContract({ address: f.token, abi: erc20Abi, functionName: 'approve', args: [impostor, 5n] }))
    const impostorPay = await lender.wallet.writeContract({
      address: impostor,
      abi: creditFacilityAbi,
      functionName: 'paySupplier',
      args: [idKey('off_impostor'), supplier, f.token, 5n, BigInt(Math.floor(Date.now() / 1000) + 600)],
    })
    await f.waitSuccess(impostorPay)
    const result = await verifySupplierPayment(f.clients, used, {
      ...lease,
      offerId: 'off_impostor',
      payer: accounts.lender.address,
      amountAtomic: 5n,
      txHash: impostorPay,
    })
    t.equal(result.ok ? 'ok' : result.reason, 'wrong_contract', 'SupplierPaid from another contract')
  })

  t.test('the used-proof registry is durable across reopen', async (t) => {
    const path = join(dir, 'reopen')
    const first = new LmdbUsedProofs(path)
    first.add('devnet-a:0xabc:3')
    await first.close()
    const second = new LmdbUsedProofs(path)
    t.ok(second.has('devnet-a:0xabc:3'))
    t.notOk(second.has('devnet-a:0xabc:4'))
    await second.close()
  })
})
