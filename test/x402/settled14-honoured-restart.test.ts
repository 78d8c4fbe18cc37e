// A payment a stranger settled first, honoured for one score (src/x402/front-run.ts), stays honoured across a restart
// of the service within its horizon: the same PAYMENT-SIGNATURE after the restart is 402 payment_already_used, as it is
// before one, and the payer paid the price once. The record is written in the store's commit before the score is
// answered, read back at start-up, and deleted once the chain's time is past its horizon (at the next lookup). Real
// anvil, real LMDB, real HTTP, the official x402 client. Fails on 8811308: the honoured settlements were kept in
// memory only, so after the restart the same header bought a second score (200).
import t from 'tap'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { x402Client } from '@x402/fetch'
import { authorizationTypes } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { exportJWK, generateKeyPair } from 'jose'
import { createTestClient, createWalletClient, http, type Address, type Hex, type LocalAccount } from 'viem'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { CONFIRMATION_TIMEOUT_MS_DEFAULT } from '../../src/x402/facilitator.ts'
import { HONOURED_SETTLEMENTS_COLLECTION } from '../../src/x402/front-run.ts'
import { eip3009, scoreNetwork, type Authorization } from '../fixtures/score-network.ts'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const { networkB, tokenConfig, token, chain, reader, balanceOf } = scoreNetwork(h)
const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }

const borrower = await fundedAccount(h.devnet, h.network, 0n)
const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 's14-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
if (source.status !== 201) throw new Error(`backing source: ${source.status}`)
const stranger = await fundedAccount(h.devnet, networkB, 0n)
const strangerWallet = createWalletClient({ account: stranger, chain, transport: http(networkB.rpcUrl) })
const body = JSON.stringify({ subject: borrower.address, publicKey: await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256' })).publicKey) })
const post = (headers: Record<string, string> = {}) => fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })


/**
 * A payment of the score signed by `payer` with the official client, valid for an hour of wall time (re-signed so: a
 * test that moves the chain's time past the horizon needs an authorization still valid there), which a stranger
 * submits on chain before the service sees it. Its header and honoured-settlement key.
 */
async function frontRunPayment(payer: LocalAccount): Promise<{ header: string; key: string }> {
  const unpaid = await post()
  const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') as string)
  await unpaid.body?.cancel()
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const payload = await client.createPaymentPayload(required)
  const inner = payload.payload as { authorization: Record<string, string>; signature: Hex }
  inner.authorization['validBefore'] = String(Math.floor(Date.now() / 1000) + 3600)
  const a = inner.authorization
  const authorization: Authorization = { from: a['from'] as Address, to: a['to'] as Address, value: BigInt(a['value'] as string), validAfter: BigInt(a['validAfter'] as string), validBefore: BigInt(a['validBefore'] as string), nonce: a['nonce'] as Hex }
  inner.signature = await payer.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message: authorization })
  const hash = await strangerWallet.writeContract({ address: token, abi: eip3009, functionName: 'transferWithAuthorization', args: [authorization.from, authorization.to, authorization.value, authorization.validAfter, authorization.validBefore, authorization.nonce, inner.signature] })
  if ((await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status !== 'success') throw new Error(`front-run reverted: ${hash}`)
  return { header: encodePaymentSignatureHeader(payload), key: `${authorization.from}:${authorization.nonce}`.toLowerCase() }
}

const honouredRecord = (key: string) => h.app.service.store.collection(HONOURED_SETTLEMENTS_COLLECTION).get(key)

t.test('a front-run settlement honoured before a restart is not honoured again after it', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const first = await frontRunPayment(payer)
  const paid = await post({ 'payment-signature': first.header })
  t.equal(paid.status, 200, `the front-run payment buys the score (got ${paid.status} ${((await paid.json()) as { code?: string }).code ?? ''})`)
  t.ok(honouredRecord(first.key), 'the honoured settlement is in the store')

  const before = await post({ 'payment-signature': first.header })
  t.equal(before.status, 402, 'the same header before a restart: no second score')
  t.equal(((await before.json()) as { code?: string }).code, 'payment_already_used')

  await h.restart()
  const after = await post({ 'payment-signature': first.header })
  const problem = (await after.json()) as { code?: string }
  t.equal(after.status, 402, `the same header after a restart: no second score (got ${after.status} ${problem.code ?? ''})`)
  t.equal(problem.code, 'payment_already_used', 'the code the in-memory path answers')
  t.equal(1_000_000n - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'the payer paid the price once')

  // Past its horizon (the score's maxTimeoutSeconds and the confirmation wait, in chain time) it could not be honoured
  // anyway: the next lookup (another payment's) deletes its record.
  const maxTimeoutSeconds = (decodePaymentRequiredHeader((await post()).headers.get('payment-required') as string).accepts[0] as { maxTimeoutSeconds: number }).maxTimeoutSeconds
  const testClient = createTestClient({ chain, transport: http(networkB.rpcUrl), mode: 'anvil' })
  await testClient.increaseTime({ seconds: maxTimeoutSeconds + CONFIRMATION_TIMEOUT_MS_DEFAULT / 1000 + 10 })
  await testClient.mine({ blocks: 1 })
  const next = await frontRunPayment(await fundedAccount(h.devnet, networkB, 1_000_000n))
  const nextPaid = await post({ 'payment-signature': next.header })
  t.equal(nextPaid.status, 200, `another front-run payment buys its score (got ${nextPaid.status} ${((await nextPaid.json()) as { code?: string }).code ?? ''})`)
  await h.app.service.store.durable()
  t.equal(honouredRecord(first.key), undefined, 'the settlement past its horizon is deleted from the store')
  t.ok(honouredRecord(next.key), 'the new one is kept')
})
