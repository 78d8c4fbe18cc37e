// The x402 facilitator endpoints over real HTTP against real anvil chains: the official HTTPFacilitatorClient sees
// exactly the kinds served, a payment made by the official client verifies and settles and moves exactly the amount
// on chain, a used authorization is refused, malformed or unserved requests are 4xx problems (never 5xx), a chain
// outage is a 503 chain_unavailable, as everywhere in the service (never a false "invalid"), only self-facilitated networks
// have endpoints, and only payments to the payees served (the paid resources' and the configured ones) are settled.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { HTTPFacilitatorClient } from '@x402/core/http'
import { createPublicClient, erc20Abi, http, type Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { buildCatalog } from '../../src/api/catalog.ts'
import { buildOpenApi } from '../../src/api/openapi.ts'
import { defaultEngineConfig } from '../../src/engine/config.ts'
import { reputationDefaults } from '../../src/reputation/index.ts'
import { DEFAULT_STREAM_LIMITS } from '../../src/stream/hub.ts'
import { ConfigError, loadServiceConfig, STORE_BUDGETS_OFF } from '../../src/app/config.ts'
import { gasMarginPercent, networkChain } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet } from '../../src/chain/devnet.ts'
import { silentLogger } from '../../src/http/log.ts'
import { startServer } from '../../src/http/server.ts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { createNetworkFacilitators, MESSAGE_CHARS_MAX, NetworkFacilitator, PaymentRequestInvalidError, servedPayees } from '../../src/x402/facilitator.ts'
import { facilitatorUrl, facilitatorUrlResolver, PUBLIC_FACILITATOR_URL_DEFAULT } from '../../src/x402/facilitator-url.ts'
import { x402Routes } from '../../src/x402/routes.ts'
import type { FacilitatorRequest } from '../../src/x402/schemas.ts'
import { checkResponse } from '../http/fixtures/openapi-check.ts'
import { exactRequirements, getJson, pay, postJson } from './fixtures/payments.ts'

compileContracts()
const devnet = await startDevnet()
t.teardown(() => devnet.stop())
const [networkA, networkB] = devnet.networks as [NetworkConfig, NetworkConfig]
const { accounts } = devnet
const token = networkB.tokens[0]?.address as Address

// Served as the app serves them: the credit score's payee (a paid resource of this service) and configured payees.
const SCORE_PRICE = 2_000n
const scorePaid = [{ network: networkB.slug, payTo: accounts.scorePayee.address, amountAtomic: SCORE_PRICE }]
const configuredPayees = { [networkB.slug]: [accounts.supplier.address, accounts.lender.address] }
const payees = servedPayees(devnet.networks, configuredPayees, scorePaid)
const routes = x402Routes(devnet.networks, { payees })
const document = buildOpenApi(routes, { info: { title: 'x402 facilitator test' } })
const server = await startServer({ routes, log: silentLogger, rateLimit: false, validateResponses: true, port: 0 })
t.teardown(() => server.close(1000))
// The URL the catalog advertises is the one the official client is pointed at.
const baseB = facilitatorUrl(networkB, { baseUrl: server.url })
const client = new HTTPFacilitatorClient({ url: baseB })

const chainB = createPublicClient({ chain: networkChain(networkB), transport: http(networkB.rpcUrl) })
const balanceOf = (holder: Address) => chainB.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] })

/** A well-formed body: a fresh payment of 1 USDC cent from the borrower to the supplier. */
async function validBody() {
  const requirements = exactRequirements({ network: networkB, payTo: accounts.supplier.address, amountAtomic: 10_000n })
  return { x402Version: 2, paymentPayload: await pay(accounts.borrower.privateKey, requirements), paymentRequirements: requirements }
}

t.test('routes: three per self-facilitated network, none for the others, a valid OpenAPI 3.1 document', async (t) => {
  t.strictSame(
    routes.map((r) => `${r.method.toUpperCase()} ${r.path} ${r.auth}`),
    [
      'GET /x402/devnet-b-facilitator/supported none',
      'POST /x402/devnet-b-facilitator/verify none',
      'POST /x402/devnet-b-facilitator/settle none',
    ],
  )
  const result = await new Validator().validate(document)
  t.equal(result.valid, true, JSON.stringify(result.errors))
  const withoutKey = devnet.networks.map((n) => ({ ...n, facilitatorPrivateKey: undefined }))
  t.strictSame(x402Routes(withoutKey), [], 'no facilitator key, no facilitator (the operator key never stands in)')
  t.throws(() => new NetworkFacilitator(networkA), /x402SelfFacilitate/, 'a network not self-facilitated gets no facilitator')
})

t.test('GET supported through the official client lists exactly the one kind served', async (t) => {
  const supported = await client.getSupported()
  t.strictSame(
    supported.kinds,
    [{ x402Version: 2, scheme: 'exact', network: `eip155:${networkB.chainId}`, extra: { payees: [
      { payTo: accounts.scorePayee.address, minAmountAtomic: SCORE_PRICE.toString() },
      { payTo: accounts.supplier.address, minAmountAtomic: '1' },
      { payTo: accounts.lender.address, minAmountAtomic: '1' },
    ] } }],
    'the payees served: the paid resource\'s first, from its price up, then the configured ones',
  )
  t.strictSame(supported.extensions, [])
  t.strictSame(supported.signers, { 'eip155:*': [accounts.facilitator.address] }, 'the facilitator key submits settlements')
  t.not(accounts.facilitator.address, accounts.operator.address, 'never the operator')
  const raw = await getJson(`${baseB}/supported`)
  t.ok(checkResponse(document, 'get', '/x402/devnet-b-facilitator/supported', raw.status, raw.body).valid, 'matches its documented schema')
})

t.test('a payment made by the official client verifies, settles and moves exactly the amount; reuse is refused', async (t) => {
  const amountAtomic = 12_345n
  const requirements = exactRequirements({ network: networkB, payTo: accounts.supplier.address, amountAtomic })
  const payload = await pay(accounts.borrower.privateKey, requirements)
  const before = { payee: await balanceOf(accounts.supplier.address), payer: await balanceOf(accounts.borrower.address) }

  const verified = await client.verify(payload, requirements)
  t.equal(verified.isValid, true, `verify: ${verified.invalidReason ?? ''}`)
  t.equal(verified.payer, accounts.borrower.address)
  t.strictSame(
    { payee: await balanceOf(accounts.supplier.address), payer: await balanceOf(accounts.borrower.address) },
    before,
    'verify moves no money',
  )

  const settled = await client.settle(payload, requirements)
  t.equal(settled.success, true, `settle: ${settled.errorReason ?? ''} ${settled.errorMessage ?? ''}`)
  t.match(settled.transaction, /^0x[0-9a-f]{64}$/)
  t.equal(settled.network, networkB.caip2)
  t.equal(settled.payer, accounts.borrower.address)
  const receipt = await chainB.getTransactionReceipt({ hash: settled.transaction as `0x${string}` })
  t.equal(receipt.status, 'success', 'the settlement transaction is on chain')
  t.equal(receipt.from.toLowerCase(), accounts.facilitator.address.toLowerCase(), 'sent by the facilitator key, not the operator: a stranger\'s settlement spends none of its gas and takes none of its nonces')
  // Sent with gasMarginPercent over its estimate (a transfer with nothing to refund uses about its estimate): room for a
  // path that costs more when mined than when estimated. Before, viem's own estimate was the limit.
  const sent = await chainB.getTransaction({ hash: settled.transaction as `0x${string}` })
  t.ok(sent.gas * 100n >= receipt.gasUsed * (100n + gasMarginPercent) - 100n * 100n, `a margin over the gas used (limit ${sent.gas}, used ${receipt.gasUsed})`)
  t.equal((await balanceOf(accounts.supplier.address)) - before.payee, amountAtomic, 'the payee received exactly the amount')
  t.equal(before.payer - (await balanceOf(accounts.borrower.address)), amountAtomic, 'the payer paid exactly the amount')

  const afterFirst = await balanceOf(accounts.supplier.address)
  const reverify = await client.verify(payload, requirements)
  t.equal(reverify.isValid, false, 'a used authorization no longer verifies')
  t.equal(reverify.invalidReason, 'invalid_exact_evm_nonce_already_used')
  const resettle = await client.settle(payload, requirements)
  t.equal(resettle.success, false, 'a used authorization does not settle twice')
  t.equal(resettle.transaction, '', 'nothing was sent')
  t.equal(await balanceOf(accounts.supplier.address), afterFirst, 'no second transfer')
})

t.test('a payment the facilitator does not send (zero value, a payer paying itself, a payee not served or paid below its minimum) is neither verified nor settled: no gas spent', async (t) => {
  const stranger = accounts.jobClient.address
  const cases: Array<[string, { payTo: Address; amountAtomic: bigint }, string]> = [
    ['zero value', { payTo: accounts.supplier.address, amountAtomic: 0n }, 'invalid_payment_zero_value'],
    ['the payer pays itself', { payTo: accounts.borrower.address, amountAtomic: 1_000n }, 'invalid_payment_payer_is_payee'],
    // A stranger paying 1 unit between its own wallets in a loop would drain the facilitator's gas.
    ['a stranger\'s payee', { payTo: stranger, amountAtomic: 1n }, 'invalid_payment_payee_not_served'],
    // 1-unit payments to the score's payee would drain it as well, at 1 unit per settlement.
    ['less than the paid resource\'s price to its payee', { payTo: accounts.scorePayee.address, amountAtomic: SCORE_PRICE - 1n }, 'invalid_payment_below_payee_minimum'],
  ]
  const sent = () =>
    Promise.all([chainB.getTransactionCount({ address: accounts.facilitator.address }), chainB.getBalance({ address: accounts.facilitator.address }), balanceOf(stranger), balanceOf(accounts.scorePayee.address)])
  const before = await sent()
  for (const [name, payment, reason] of cases) {
    const requirements = exactRequirements({ network: networkB, ...payment })
    const body = { x402Version: 2, paymentPayload: await pay(accounts.borrower.privateKey, requirements), paymentRequirements: requirements }
    const verified = await postJson(`${baseB}/verify`, body)
    t.strictSame([verified.status, verified.body.isValid, verified.body.invalidReason, verified.body.payer], [200, false, reason, accounts.borrower.address], `verify, ${name}`)
    const settled = await postJson(`${baseB}/settle`, body)
    t.strictSame([settled.status, settled.body.success, settled.body.errorReason, settled.body.transaction], [200, false, reason, ''], `settle, ${name}`)
    t.ok(checkResponse(document, 'post', '/x402/devnet-b-facilitator/settle', settled.status, settled.body).valid, `settle, ${name}: matches its documented schema`)
    // The official client takes the refusal as an answer too.
    t.equal((await client.settle(body.paymentPayload, requirements)).errorReason, reason, `official client, ${name}`)
  }
  t.strictSame(await sent(), before, 'nothing was sent: the facilitator\'s nonce and gas balance, and the payees\' token balances, are unchanged')
})

t.test('payments to the payees served settle: the paid resource\'s payee by default, a configured one beside it', async (t) => {
  for (const [name, payee] of [['the credit score\'s payee', accounts.scorePayee.address], ['a configured payee', accounts.supplier.address]] as const) {
    const requirements = exactRequirements({ network: networkB, payTo: payee, amountAtomic: SCORE_PRICE })
    const payload = await pay(accounts.borrower.privateKey, requirements)
    const before = await balanceOf(payee)
    t.equal((await client.verify(payload, requirements)).isValid, true, `verify, ${name}`)
    const settled = await client.settle(payload, requirements)
    t.equal(settled.success, true, `settle, ${name}: ${settled.errorReason ?? ''}`)
    t.equal((await balanceOf(payee)) - before, SCORE_PRICE, `${name} received the amount`)
  }
  // Without the configured list, only the paid resource's payee is served.
  const [scoreOnly] = createNetworkFacilitators(devnet.networks, { payees: servedPayees(devnet.networks, {}, scorePaid) })
  const requirements = exactRequirements({ network: networkB, payTo: accounts.supplier.address, amountAtomic: 2_000n })
  const body = { x402Version: 2, paymentPayload: await pay(accounts.borrower.privateKey, requirements), paymentRequirements: requirements } as FacilitatorRequest
  t.equal((await scoreOnly!.verify(body, undefined)).invalidReason, 'invalid_payment_payee_not_served', 'an unconfigured payee is not served')
})

t.test('served payees: per self-facilitated network, deduplicated and checksummed, each at its lowest minimum; a configured network not facilitated here stops the start', async (t) => {
  const lower = accounts.supplier.address.toLowerCase() as Address
  t.strictSame(
    servedPayees(devnet.networks, { [networkB.slug]: [lower, accounts.supplier.address] }, [...scorePaid, { network: networkA.slug, payTo: accounts.lender.address, amountAtomic: 5n }]),
    { [networkB.slug]: [{ payTo: accounts.scorePayee.address, minAmountAtomic: SCORE_PRICE }, { payTo: accounts.supplier.address, minAmountAtomic: 1n }] },
    'a paid resource on a network not facilitated here is served by its own facilitator, not this one',
  )
  t.strictSame(
    servedPayees(devnet.networks, { [networkB.slug]: [accounts.scorePayee.address] }, scorePaid),
    { [networkB.slug]: [{ payTo: accounts.scorePayee.address, minAmountAtomic: 1n }] },
    'a paid resource\'s payee also configured is served from 1 unit: the operator chose so',
  )
  t.strictSame(servedPayees(devnet.networks, {}, []), { [networkB.slug]: [] }, 'nothing paid, nothing configured: no payee served')
  t.throws(() => servedPayees(devnet.networks, { [networkA.slug]: [accounts.supplier.address] }, []), ConfigError, 'devnet-a is not facilitated here')
  t.throws(() => servedPayees(devnet.networks, { 'no-such-net': [accounts.supplier.address] }, []), ConfigError, 'an unknown network')

  const dir = mkdtempSync(join(tmpdir(), 'facilitator-payees-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ x402FacilitatorPayees: { [networkB.slug]: [lower] } }))
  t.strictSame(loadServiceConfig({ CONFIG_FILE: file }).x402FacilitatorPayees, { [networkB.slug]: [accounts.supplier.address] }, 'CONFIG_FILE x402FacilitatorPayees, checksummed')
  t.strictSame(loadServiceConfig({}).x402FacilitatorPayees, {}, 'none by default')
  writeFileSync(file, JSON.stringify({ x402FacilitatorPayees: { [networkB.slug]: ['0x1234'] } }))
  t.throws(() => loadServiceConfig({ CONFIG_FILE: file }), ConfigError, 'not an address')
})

t.test('the facilitator routes are rate limited per caller like every route', async (t) => {
  const limited = await startServer({ routes, log: silentLogger, rateLimit: { burst: 2, refillPerSecond: 0.001 }, validateResponses: true, port: 0 })
  t.teardown(() => limited.close(1000))
  const body = { x402Version: 2, paymentPayload: {}, paymentRequirements: {} }
  const statuses = []
  for (let i = 0; i < 3; i += 1) statuses.push((await postJson(`${limited.url}/x402/devnet-b-facilitator/settle`, body)).status)
  t.strictSame(statuses, [400, 400, 429], 'the third request of a burst of 2 is refused before it reaches the facilitator')
})

t.test('parallel settlements of distinct payments all land (the facilitator nonce is managed)', async (t) => {
  const count = 6
  const requirements = exactRequirements({ network: networkB, payTo: accounts.lender.address, amountAtomic: 1_000n })
  const payers = [accounts.borrower, accounts.jobClient, accounts.attester]
  const payloads = await Promise.all(Array.from({ length: count }, (_, i) => pay((payers[i % payers.length] as { privateKey: `0x${string}` }).privateKey, requirements)))
  const before = await balanceOf(accounts.lender.address)
  const results = await Promise.all(payloads.map((payload) => client.settle(payload, requirements)))
  t.strictSame(results.map((r) => r.success), Array(count).fill(true), JSON.stringify(results.filter((r) => !r.success)))
  t.equal(new Set(results.map((r) => r.transaction)).size, count, 'one transaction each')
  t.equal((await balanceOf(accounts.lender.address)) - before, 1_000n * BigInt(count))
})

t.test('business failures are 200 answers with an x402 reason, and move nothing', async (t) => {
  const requirements = exactRequirements({ network: networkB, payTo: accounts.supplier.address, amountAtomic: 5_000n })
  const before = await balanceOf(accounts.supplier.address)

  // The client signs validBefore = now + 3 s; the facilitator wants at least now + 6 s on the wall clock.
  const shortRequirements = { ...requirements, maxTimeoutSeconds: 3 }
  const short = await pay(accounts.borrower.privateKey, shortRequirements)
  const shortVerify = await postJson(`${baseB}/verify`, { x402Version: 2, paymentPayload: short, paymentRequirements: shortRequirements })
  t.equal(shortVerify.status, 200)
  t.strictSame([shortVerify.body.isValid, shortVerify.body.invalidReason], [false, 'invalid_exact_evm_payload_authorization_valid_before'])
  const shortSettle = await postJson(`${baseB}/settle`, { x402Version: 2, paymentPayload: short, paymentRequirements: shortRequirements })
  t.equal(shortSettle.status, 200)
  t.strictSame([shortSettle.body.success, shortSettle.body.transaction], [false, ''])

  // Paid to someone else than the requirements name.
  const elsewhere = await pay(accounts.borrower.privateKey, { ...requirements, payTo: accounts.lender.address })
  const mismatch = await postJson(`${baseB}/verify`, { x402Version: 2, paymentPayload: elsewhere, paymentRequirements: requirements })
  t.equal(mismatch.status, 200)
  t.equal(mismatch.body.isValid, false)
  t.ok(checkResponse(document, 'post', '/x402/devnet-b-facilitator/verify', mismatch.status, mismatch.body).valid, 'matches its documented schema')

  // A payer without funds: the simulation fails; its message must not leak the RPC address or the call's details.
  const broke = await pay(generatePrivateKey(), requirements)
  const poor = await postJson(`${baseB}/verify`, { x402Version: 2, paymentPayload: broke, paymentRequirements: requirements })
  t.equal(poor.status, 200)
  t.strictSame([poor.body.isValid, poor.body.invalidReason], [false, 'invalid_exact_evm_insufficient_balance'])
  t.type(poor.body.invalidMessage, 'string')
  t.notMatch(poor.body.invalidMessage, networkB.rpcUrl)
  t.notMatch(poor.body.invalidMessage, /URL:|Version: viem|Contract Call:/)
  t.ok(poor.body.invalidMessage.length <= MESSAGE_CHARS_MAX)
  const poorSettle = await postJson(`${baseB}/settle`, { x402Version: 2, paymentPayload: broke, paymentRequirements: requirements })
  t.equal(poorSettle.status, 200)
  t.equal(poorSettle.body.success, false)
  t.ok(checkResponse(document, 'post', '/x402/devnet-b-facilitator/settle', poorSettle.status, poorSettle.body).valid, 'matches its documented schema')

  t.equal(await balanceOf(accounts.supplier.address), before, 'no money moved')
})

t.test('malformed or unserved requests are 400 problems on verify and settle, never 5xx', async (t) => {
  const body = await validBody()
  const req = body.paymentRequirements
  const other = (patch: Partial<typeof req>) => ({ ...body, paymentRequirements: { ...req, ...patch }, paymentPayload: { ...body.paymentPayload, accepted: { ...req, ...patch } } })
  const auth = body.paymentPayload.payload['authorization'] as Record<string, unknown>
  const cases: Array<[string, unknown, string]> = [
    ['x402Version a string', { ...body, x402Version: '2' }, 'validation_failed'],
    ['paymentRequirements missing', { x402Version: 2, paymentPayload: body.paymentPayload }, 'validation_failed'],
    ['paymentPayload missing', { x402Version: 2, paymentRequirements: req }, 'validation_failed'],
    ['an unknown top-level field', { ...body, extra: 1 }, 'validation_failed'],
    ['an empty object', {}, 'validation_failed'],
    ['an array', [body], 'validation_failed'],
    ['amount not an integer string', other({ amount: '1.5' }), 'validation_failed'],
    ['asset not an address', other({ asset: 'USDC' }), 'validation_failed'],
    ['maxTimeoutSeconds a string', other({ maxTimeoutSeconds: '60' as never }), 'validation_failed'],
    ['network not CAIP-2', other({ network: 'devnet-b' as never }), 'validation_failed'],
    ['authorization value not a number', { ...body, paymentPayload: { ...body.paymentPayload, payload: { ...body.paymentPayload.payload, authorization: { ...auth, value: 'abc' } } } }, 'validation_failed'],
    ['signature missing', { ...body, paymentPayload: { ...body.paymentPayload, payload: { authorization: auth } } }, 'validation_failed'],
    ['an unknown field in the authorization', { ...body, paymentPayload: { ...body.paymentPayload, payload: { ...body.paymentPayload.payload, authorization: { ...auth, extra: '1' } } } }, 'validation_failed'],
    ['x402Version differs from the payload\'s', { ...body, paymentPayload: { ...body.paymentPayload, x402Version: 3 } }, 'validation_failed'],
    ['an unknown network', other({ network: 'eip155:999999' }), 'x402_network_unsupported'],
    ['the network of devnet-a (not served here)', other({ network: networkA.caip2 }), 'x402_network_unsupported'],
    ['an unsupported scheme', other({ scheme: 'upto' }), 'x402_scheme_unsupported'],
    ['version 1', { ...body, x402Version: 1, paymentPayload: { ...body.paymentPayload, x402Version: 1 } }, 'x402_version_unsupported'],
  ]
  for (const operation of ['verify', 'settle']) {
    for (const [name, input, code] of cases) {
      const answer = await postJson(`${baseB}/${operation}`, input)
      t.equal(answer.status, 400, `${operation}, ${name}: 400`)
      t.equal(answer.contentType, 'application/problem+json', `${operation}, ${name}: problem+json`)
      t.equal(answer.body?.code, code, `${operation}, ${name}: ${code}`)
    }
    const notJson = await postJson(`${baseB}/${operation}`, '{"x402Version":', true)
    t.strictSame([notJson.status, notJson.body?.code], [400, 'malformed_json'], `${operation}: not JSON`)
  }
  // The official client sees a thrown error for them, as for any non-2xx answer.
  await t.rejects(client.verify({ ...body.paymentPayload, accepted: { ...req, scheme: 'upto' } }, { ...req, scheme: 'upto' }), /400/)
  t.ok(checkResponse(document, 'post', '/x402/devnet-b-facilitator/verify', 400, (await postJson(`${baseB}/verify`, {})).body).valid, 'the 400 matches its documented schema')
})

t.test('the protocol validator runs behind the route schema', async (t) => {
  const [facilitator] = createNetworkFacilitators(devnet.networks)
  if (facilitator === undefined) throw new Error('no facilitator')
  const body = await validBody()
  // Bypasses the route's schema: an empty resource url is refused by @x402/core's own validator.
  const request = { ...body, paymentPayload: { ...body.paymentPayload, resource: { url: '' } } } as unknown as FacilitatorRequest
  const error = await facilitator.verify(request, undefined).catch((e: unknown) => e)
  t.type(error, PaymentRequestInvalidError)
  t.match((error as PaymentRequestInvalidError).issues, [{ path: '/body/paymentPayload/resource/url' }])
})

t.test('a chain outage is a 503, not a false "invalid signature"', async (t) => {
  const closedPort = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
  const down: NetworkConfig = { ...networkB, rpcUrl: `http://127.0.0.1:${closedPort}` }
  const outage = await startServer({ routes: x402Routes([down], { payees }), log: silentLogger, rateLimit: false, validateResponses: true, port: 0 })
  t.teardown(() => outage.close(1000))
  const body = await validBody()
  for (const operation of ['verify', 'settle']) {
    const answer = await postJson(`${outage.url}/x402/devnet-b-facilitator/${operation}`, body)
    t.strictSame([answer.status, answer.contentType, answer.body?.code], [503, 'application/problem+json', 'chain_unavailable'], operation)
    t.notMatch(JSON.stringify(answer.body), String(closedPort), 'the problem does not name the RPC address')
  }
  // The same payment is fine once the chain answers: the outage decided nothing.
  t.equal((await client.verify(body.paymentPayload, body.paymentRequirements)).isValid, true)
})

t.test('devnet-a has no facilitator path', async (t) => {
  for (const [method, path] of [['GET', 'supported'], ['POST', 'verify'], ['POST', 'settle']] as const) {
    const response = await fetch(`${server.url}/x402/devnet-a-facilitator/${path}`, {
      method,
      ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(await validBody()) } : {}),
    })
    t.equal(response.status, 404, `${method} ${path}`)
    t.equal(response.headers.get('content-type'), 'application/problem+json')
    await response.body?.cancel()
  }
})

t.test('facilitator URLs: self-facilitated networks point here, the others to the public facilitator', async (t) => {
  t.equal(facilitatorUrl(networkB, { baseUrl: 'https://credit.example' }), 'https://credit.example/x402/devnet-b-facilitator')
  t.equal(facilitatorUrl(networkB, { baseUrl: 'https://credit.example/' }), 'https://credit.example/x402/devnet-b-facilitator', 'trailing slash')
  t.equal(facilitatorUrl(networkA, { baseUrl: 'https://credit.example' }), PUBLIC_FACILITATOR_URL_DEFAULT)
  t.equal(PUBLIC_FACILITATOR_URL_DEFAULT, 'https://x402.org/facilitator')
  t.equal(facilitatorUrl(networkA, { baseUrl: 'https://credit.example', publicFacilitatorUrl: 'https://f.example' }), 'https://f.example')
  t.equal(
    facilitatorUrl({ ...networkB, facilitatorPrivateKey: undefined }, { baseUrl: 'https://credit.example' }),
    PUBLIC_FACILITATOR_URL_DEFAULT,
    'without a facilitator key nothing is served here, so nothing here is advertised',
  )
  // The catalog's selfHosted flag agrees with the URL it advertises beside it (it read the config flag alone).
  const keyless = { ...networkB, facilitatorPrivateKey: undefined }
  const catalog = buildCatalog({
    baseUrl: 'https://credit.example', authDomain: 'credit.example', auth: { nonceTtlSeconds: 300, sessionTtlSeconds: 3600, sessionsPerWalletMax: 10 },
    routes: [], networks: [networkA, networkB, keyless], reclaimDelaySeconds: () => null, borrowerMayReclaim: () => null, publishRpcUrls: false,
    facilitatorUrl: facilitatorUrlResolver({ baseUrl: 'https://credit.example' }), facilitatorPayees: () => [],
    engine: defaultEngineConfig, attesters: [], operators: [], bodyLimitBytes: 65536, creditScore: null, reputation: reputationDefaults,
    passportIssuer: accounts.operator.address, idempotencyRetentionSeconds: 86400, rateLimitPerSecond: 100, stream: DEFAULT_STREAM_LIMITS, storeBudgets: STORE_BUDGETS_OFF,
  })
  t.strictSame(
    catalog.networks.map((n) => [n.facilitator.selfHosted, n.facilitator.url]),
    [[false, PUBLIC_FACILITATOR_URL_DEFAULT], [true, 'https://credit.example/x402/devnet-b-facilitator'], [false, PUBLIC_FACILITATOR_URL_DEFAULT]],
    'a network flagged self-facilitated without a facilitator key is not advertised as self-hosted',
  )
  const resolve = facilitatorUrlResolver({ baseUrl: server.url })
  t.strictSame(devnet.networks.map(resolve), [PUBLIC_FACILITATOR_URL_DEFAULT, `${server.url}/x402/devnet-b-facilitator`])
  // Every advertised self-hosted URL answers /supported with its own network.
  const supported = await getJson(`${resolve(networkB)}/supported`)
  t.equal(supported.body.kinds[0].network, networkB.caip2)
})
