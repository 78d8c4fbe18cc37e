// A payment a stranger settled first counts once, and only as asked (src/x402/front-run.ts; the finding is
// test/score/outsider12-score-frontrun.test.ts). The same front-run authorization presented again is 402
// payment_already_used, and so is an authorization whose nonce went to another transfer (another payee, another
// amount). Real anvil, real HTTP, the official x402 client. Fails on 04104a7: no front-run settlement is honoured
// there, so the first score of each case (the control) is 402 payment_already_used.
import t from 'tap'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { authorizationTypes } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { exportJWK, generateKeyPair } from 'jose'
import { createWalletClient, encodeFunctionData, http, parseAbi, toHex, type Address, type Hex, type LocalAccount } from 'viem'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { eip3009, scoreNetwork, type Authorization } from '../fixtures/score-network.ts'
import { fundedAccount, signedIn, startHarness } from '../fixtures/service.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const { networkB, tokenConfig, token, chain, reader, balanceOf } = scoreNetwork(h)
const payee = h.devnet.accounts.scorePayee.address

type Signed = { authorization: Record<string, string>; signature: Hex }

const borrower = await fundedAccount(h.devnet, h.network, 0n)
const source = await (await signedIn(h.url, borrower)).post('/credit/backing-sources', await backingSourceBody(h, borrower.address, { sourceId: 'fr-src', valueAtomic: 5_000_000n, liquidationValueAtomic: 4_000_000n, advanceRateBps: 5000 }))
if (source.status !== 201) throw new Error(`backing source: ${source.status}`)
const stranger = await fundedAccount(h.devnet, networkB, 0n)
const strangerWallet = createWalletClient({ account: stranger, chain, transport: http(networkB.rpcUrl) })

/** The stranger submits `a` signed by `signature` and waits for it to be mined; the transaction's hash. */
async function submit(a: Authorization, signature: Hex): Promise<Hex> {
  const hash = await strangerWallet.writeContract({ address: token, abi: eip3009, functionName: 'transferWithAuthorization', args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature] })
  const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success') throw new Error(`transferWithAuthorization reverted: ${hash}`)
  return hash
}

function authorizationOf(signed: Signed): Authorization {
  const a = signed.authorization
  return { from: a['from'] as Address, to: a['to'] as Address, value: BigInt(a['value'] as string), validAfter: BigInt(a['validAfter'] as string), validBefore: BigInt(a['validBefore'] as string), nonce: a['nonce'] as Hex }
}

const body = JSON.stringify({ subject: borrower.address, publicKey: await exportJWK((await generateKeyPair('ECDH-ES', { crv: 'P-256' })).publicKey) })
const post = (headers: Record<string, string> = {}) => fetch(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

/**
 * Pays /credit-score as `payer` with the official client; `beforeSending` sees the signed payment (and its header)
 * before the request that carries it leaves.
 */
async function pay(payer: LocalAccount, beforeSending: (signed: Signed, header: string) => Promise<void>) {
  let header: string | undefined
  const intercepting: typeof fetch = async (input, init) => {
    const sent = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get('payment-signature')
    if (sent !== null && header === undefined) {
      header = sent
      await beforeSending((JSON.parse(Buffer.from(sent, 'base64').toString('utf8')) as { payload: Signed }).payload, sent)
    }
    return fetch(input, init)
  }
  const client = new x402Client().register(networkB.caip2, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: networkB.caip2, asset: token }] })
  const response = await wrapFetchWithPayment(intercepting, client)(`${h.url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  return { response, body: (await response.json()) as { code?: string; jwe?: string }, header: header as string }
}

t.test('a front-run settlement buys one score: the same authorization again is payment_already_used', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const before = await balanceOf(payer.address)
  let frontRun: Hex | undefined
  const first = await pay(payer, async (signed) => {
    frontRun = await submit(authorizationOf(signed), signed.signature)
  })
  t.equal(first.response.status, 200, `the front-run payment buys the score (got ${first.response.status} ${first.body.code ?? ''})`)
  t.ok(first.body.jwe, 'the score')
  const receipt = decodePaymentResponseHeader(first.response.headers.get('payment-response') as string)
  t.equal(receipt.transaction, frontRun, 'PAYMENT-RESPONSE names the stranger\'s settlement')

  const again = await post({ 'payment-signature': first.header })
  const problem = (await again.json()) as { code?: string }
  t.equal(again.status, 402, 'the same authorization buys no second score')
  t.equal(problem.code, 'payment_already_used')
  t.equal(before - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

t.test('an authorization whose nonce went to another transfer is payment_already_used', async (t) => {
  const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }
  const cases: Array<[string, (a: Authorization) => Authorization]> = [
    ['another payee', (a) => ({ ...a, to: stranger.address })],
    ['another amount', (a) => ({ ...a, value: a.value * 2n })],
  ]
  for (const [name, other] of cases) {
    const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
    const payeeBefore = await balanceOf(payee)
    // The payer signs another authorization with the same nonce, and it is used first.
    const refused = await pay(payer, async (signed) => {
      const elsewhere = other(authorizationOf(signed))
      await submit(elsewhere, await payer.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message: elsewhere }))
    })
    t.equal(refused.response.status, 402, `${name}: no score`)
    t.equal(refused.body.code, 'payment_already_used', `${name}: the code it had`)
    const paid = (await balanceOf(payee)) - payeeBefore
    t.equal(paid, name === 'another amount' ? 2n * DEVNET_PRICE_ATOMIC : 0n, `${name}: the payee got only the other transfer`)
    // The control: the same payer's next authorization, front-run exactly as asked, does buy the score.
    const honoured = await pay(payer, async (signed) => {
      await submit(authorizationOf(signed), signed.signature)
    })
    t.equal(honoured.response.status, 200, `${name}: a front-run settlement as asked still counts (got ${honoured.response.status} ${honoured.body.code ?? ''})`)
  }
})

// The race: the stranger's transaction still waits in the pool when the facilitator settles. A node that estimates
// gas against the pending state (anvil) makes the facilitator's send find the nonce used and send nothing; one that
// does not sends it, and the stranger's higher tip mines first in the same block, the facilitator's reverting. Either
// way the service waits for the stranger's transaction to be mined and answers the score on it (without the wait: 402
// payment_settlement_failed, the price charged). The outcome asserted does not depend on when the block is mined.
t.test('a stranger\'s settlement still pending when the facilitator settles is the payment, once mined', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const rpc = (method: string, params: unknown[] = []) => reader.request({ method: method as never, params: params as never })
  const pendingCount = async () => ((await reader.getBlock({ blockTag: 'pending' })).transactions.length)
  let frontRun: Hex | undefined
  let mined: Promise<void> | undefined
  const paid = await pay(payer, async (signed) => {
    // Mining stops until the facilitator's transaction joins the stranger's in the pool (or, where it sends none,
    // for a while): then one block mines them, the stranger's first.
    await rpc('evm_setIntervalMining', [0])
    await rpc('evm_setAutomine', [false])
    const a = authorizationOf(signed)
    frontRun = await strangerWallet.writeContract({ address: token, abi: eip3009, functionName: 'transferWithAuthorization', args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signed.signature], maxPriorityFeePerGas: 10n ** 10n, maxFeePerGas: 10n ** 11n, gas: 200_000n })
    mined = (async () => {
      for (let i = 0; i < 200 && (await pendingCount()) < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 20))
      await rpc('evm_mine')
      await rpc('evm_setIntervalMining', [(networkB.blockTimeMs ?? 1000) / 1000]) // seconds: the devnet's block time again
    })()
  })
  await mined
  const block = await reader.getBlock({ blockTag: 'latest', includeTransactions: true })
  t.equal(paid.response.status, 200, `the score (got ${paid.response.status} ${paid.body.code ?? ''})`)
  t.equal(decodePaymentResponseHeader(paid.response.headers.get('payment-response') as string).transaction, frontRun, 'PAYMENT-RESPONSE names the stranger\'s settlement')
  t.ok(block.transactions.some((tx) => tx.hash === frontRun), 'the stranger\'s transaction was mined in the last block')
  const charged = await balanceOf(payer.address)
  t.equal(1_000_000n - charged, DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})

// This facilitator refuses the made-up payload's signature before it looks at the nonce (payment_invalid), so the
// lookup is not reached; the lookup checks the payer's signature again (front-run.ts) for a facilitator that answers
// the spent nonce first.
t.test('a front-run settlement counts only for a payload its payer signed', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }
  let forged: Response | undefined
  const paid = await pay(payer, async (signed, header) => {
    const a = authorizationOf(signed)
    await submit(a, signed.signature)
    // Someone who saw the settlement on chain makes up the payload, signed by its own key, and asks first.
    const decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: Signed }
    decoded.payload.signature = await stranger.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message: a })
    forged = await post({ 'payment-signature': Buffer.from(JSON.stringify(decoded)).toString('base64') })
  })
  const problem = (await (forged as Response).json()) as { code?: string }
  t.equal(forged?.status, 402, 'the made-up payload buys nothing')
  t.ok(['payment_already_used', 'payment_invalid'].includes(problem.code as string), `refused as spent or invalid (${problem.code})`)
  t.equal(paid.response.status, 200, `the payer's own payload still buys its score (got ${paid.response.status} ${paid.body.code ?? ''})`)
})

// outsider13: two of a payer's authorizations settled by a stranger in one transaction (Multicall3, on every chain at
// 0xcA11...CA11): each paid the price once, each buys its score (the settlement is remembered per authorization, not
// per transaction).
t.test('two authorizations settled in one stranger transaction buy two scores', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }
  const multicall3 = parseAbi(['struct Call3 { address target; bool allowFailure; bytes callData; }', 'struct Result { bool success; bytes returnData; }', 'function aggregate3(Call3[] calls) payable returns (Result[] returnData)'])
  const call = (a: Authorization, signature: Hex) => ({ target: token, allowFailure: false, callData: encodeFunctionData({ abi: eip3009, functionName: 'transferWithAuthorization', args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature] }) })
  let second: string | undefined
  const first = await pay(payer, async (signed, header) => {
    // The payer's next payment (a new nonce), and both in one transaction.
    const a = authorizationOf(signed)
    const next = { ...a, nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) }
    const signature = await payer.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message: next })
    const decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: Signed }
    decoded.payload = { authorization: { ...signed.authorization, nonce: next.nonce }, signature }
    second = Buffer.from(JSON.stringify(decoded)).toString('base64')
    const hash = await strangerWallet.writeContract({ address: '0xcA11bde05977b3631167028862bE2a173976CA11', abi: multicall3, functionName: 'aggregate3', args: [[call(a, signed.signature), call(next, signature)]] })
    t.equal((await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status, 'success')
  })
  t.equal(first.response.status, 200, `the first buys its score (got ${first.response.status} ${first.body.code ?? ''})`)
  const again = await post({ 'payment-signature': second as string })
  t.equal(again.status, 200, `the second buys its score (got ${again.status} ${((await again.json()) as { code?: string }).code ?? ''})`)
  t.equal(1_000_000n - (await balanceOf(payer.address)), 2n * DEVNET_PRICE_ATOMIC, 'the payer paid the price twice')
})

// outsider13: one front-run settlement, presented at once as its payload and five re-signings of the same
// authorization (the same nonce, another validBefore): one score in all.
t.test('a front-run settlement presented re-signed, at once, buys one score', async (t) => {
  const payer = await fundedAccount(h.devnet, networkB, 1_000_000n)
  const domain = { name: tokenConfig.eip712Name, version: tokenConfig.eip712Version, chainId: networkB.chainId, verifyingContract: token }
  let variants: Promise<number>[] = []
  const paid = await pay(payer, async (signed, header) => {
    const a = authorizationOf(signed)
    await submit(a, signed.signature)
    const decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: Signed }
    variants = [1n, 2n, 3n, 4n, 5n].map(async (k) => {
      const resigned = { ...a, validBefore: a.validBefore - k }
      const signature = await payer.signTypedData({ domain, types: authorizationTypes, primaryType: 'TransferWithAuthorization', message: resigned })
      const payload = { ...decoded, payload: { authorization: { ...signed.authorization, validBefore: resigned.validBefore.toString() }, signature } }
      return (await post({ 'payment-signature': Buffer.from(JSON.stringify(payload)).toString('base64') })).status
    })
  })
  const statuses = [paid.response.status, ...(await Promise.all(variants))]
  t.equal(statuses.filter((status) => status === 200).length, 1, `one score for one price (got ${JSON.stringify(statuses)})`)
  t.equal(1_000_000n - (await balanceOf(payer.address)), DEVNET_PRICE_ATOMIC, 'the payer paid the price once')
})
