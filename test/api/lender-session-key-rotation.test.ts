// A lender whose registration's answer was lost (the only one with the session key's private half: a retry with the
// same Idempotency-Key replays it with privateKey null, registering again is 409 lender_exists) gets a new session key
// for the same registration, POST /lenders/{address}/session-key: the lender only, while it did nothing but register
// and for lenderUnfundedTtlSeconds after it; its waiting place moves to the new wallet, so lendersPendingPerClientMax
// (1 here) still holds. The SDK asks for it by itself when its retry got the replay (an answer lost by a real proxy
// that cuts the connection). Real service behind a trusted proxy (X-Forwarded-For names the client) and anvil.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress, type PrivateKeyAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { ChainAgent } from '../../src/client/chain.ts'
import type { Reply } from '../../src/client/client.ts'
import { AgentCredit } from '../../src/client/sdk.ts'
import { creditRequest, fundedAccount, fundedJob, readyLender, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, openApiDocument } from './fixtures/api.ts'

const TTL_SECONDS = 3600
let clockOffsetMs = 0
const h = await startHarness({
  clock: () => Date.now() + clockOffsetMs,
  config: { lenderUnfundedTtlSeconds: TTL_SECONDS, lendersPendingPerClientMax: 1, trustedProxies: ['127.0.0.1'] },
})
t.teardown(() => h.stop())

const policy = () => ({ availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'] as Array<'A' | 'B' | 'C'> })

/** A POST as `account`, forwarded for client address `from`, with an Idempotency-Key. */
async function post(account: PrivateKeyAccount, path: string, body: unknown, from: string, key: string): Promise<Reply> {
  const client = await signedIn(h.url, account)
  const response = await fetch(`${h.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${client.token}`, 'content-type': 'application/json', 'x-forwarded-for': from, 'idempotency-key': key },
    body: JSON.stringify(body),
  })
  return { status: response.status, headers: response.headers, body: await response.json() }
}

const rotate = (account: PrivateKeyAccount, from: string, key = crypto.randomUUID(), lender = account.address) => post(account, `/lenders/${lender}/session-key`, {}, from, key)
const engine = () => h.app.service.engine
const waiting = () => h.app.service.waitingRegistrations

t.test('a lender that was leased keeps its session key: 409 session_key_not_replaceable, nothing recorded', async (t) => {
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(100) })
  const { borrower, borrowerClient } = await fundedJob(h, { jobId: 'job_rotation_leased', receivableAtomic: usdc(50) })
  const offer = await borrowerClient.post('/credit/request', creditRequest(h, borrower.address, 'job_rotation_leased', usdc(5), usdc(1)))
  t.equal(offer.body.decision, 'approved', JSON.stringify(offer.body))
  const match = await borrowerClient.post('/credit/match', { offerId: offer.body.offer.offerId })
  t.equal(match.body.lease?.lender, lender.account.address, 'the lender was leased')

  const refused = await rotate(lender.account, '198.51.100.1')
  expectProblem(t, refused, 409, 'session_key_not_replaceable')
  expectDocumented(t, await openApiDocument(h.url), 'post', '/lenders/{address}/session-key', refused)
  t.equal(engine().getLender(lender.account.address)?.sessionAddress, lender.session.address, 'the session wallet is the same')
  t.equal(h.app.service.sessionKeyRecords.get(lender.account.address)?.address, lender.session.address)
})

let rotated: { account: PrivateKeyAccount; session: PrivateKeyAccount } | undefined

t.test('a registration whose answer was lost: the replay has no key, registering again is 409, the session key is replaced and the new one works', async (t) => {
  const account = await fundedAccount(h.devnet, h.network, usdc(100))
  const from = '203.0.113.7'
  const key = crypto.randomUUID()
  const first = await post(account, '/lenders/register', policy(), from, key)
  t.equal(first.status, 201)
  const lostSession = first.body.sessionKey.address
  // The first answer is lost: the retry under the same key replays it without the private key.
  const replay = await post(account, '/lenders/register', policy(), from, key)
  t.equal(replay.headers.get('idempotent-replayed'), 'true')
  t.equal(replay.body.sessionKey.privateKey, null, 'a replay never carries the private key')
  // (From another client address: this one is at its bound of 1, which is answered first.)
  expectProblem(t, await post(account, '/lenders/register', policy(), '203.0.113.8', crypto.randomUUID()), 409, 'lender_exists', 'registering again')
  const before = engine().getLender(account.address)!
  t.equal(waiting().waitingFrom(from), 1, 'the registration waits for funds from its client')

  const rotationKey = crypto.randomUUID()
  const answer = await rotate(account, from, rotationKey)
  t.equal(answer.status, 201, JSON.stringify(answer.body))
  expectDocumented(t, await openApiDocument(h.url), 'post', '/lenders/{address}/session-key', answer)
  const privateKey = answer.body.sessionKey.privateKey as Hex
  const session = privateKeyToAccount(privateKey)
  t.equal(answer.body.sessionKey.address, session.address, 'the answer carries the new key')
  t.not(session.address, lostSession, 'a new session wallet')
  t.same(answer.body.fundingAddresses.map((f: { address: string }) => f.address), [session.address])
  t.same(answer.body.spendPolicy.assets, first.body.spendPolicy.assets, 'the same spend policy')
  t.equal(answer.body.spendPolicy.totalCapAtomic, first.body.spendPolicy.totalCapAtomic)
  const after = engine().getLender(account.address)!
  t.equal(after.sessionAddress, session.address, 'the registration names the new session wallet')
  t.equal(after.registrationSeq, before.registrationSeq, 'and keeps its place')
  t.equal(after.registeredAtMs, before.registeredAtMs, 'and its time: the sweep removes it when it would have removed the first')
  t.equal(h.app.service.sessionKeyRecords.get(account.address)?.address, session.address, 'the session key record is the new one')
  t.equal(waiting().waitingFrom(from), 1, 'its waiting place moved, the client at its bound of 1 was not refused')
  const again = await rotate(account, from, rotationKey)
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.equal(again.body.sessionKey.privateKey, null, 'the rotation\'s replay does not repeat its key either')
  t.equal(again.body.sessionKey.address, session.address)

  // The new key sets up and funds the wallet: the lender can lend.
  const owner = new ChainAgent(h.network, account)
  await owner.sendGas(session.address, 10n ** 18n)
  await owner.transferToken(USDC, session.address, usdc(100))
  await new ChainAgent(h.network, session).sendAll(answer.body.setupTransactions)
  await h.app.service.watcher.waitFor(() => !engine().isParked(account.address), 10_000)
  t.notOk(engine().isParked(account.address), 'funded through the new key, the lender is in the books')
  t.equal(waiting().waitingFrom(from), 0, 'and waits no more')
  rotated = { account, session }
})

t.test('only the lender: another wallet is 403 forbidden; an unknown lender 404', async (t) => {
  const { account, session } = rotated!
  const stranger = privateKeyToAccount(generatePrivateKey())
  expectProblem(t, await rotate(stranger, '198.51.100.2', crypto.randomUUID(), account.address), 403, 'forbidden')
  t.equal(engine().getLender(account.address)?.sessionAddress, session.address, 'nothing changed')
  expectProblem(t, await rotate(stranger, '198.51.100.2'), 404, 'lender_not_found')
})

t.test('lenderUnfundedTtlSeconds after its registration, the session key stays (the sweep has decided on it): 409', async (t) => {
  const { account, session } = rotated!
  clockOffsetMs = (TTL_SECONDS + 1) * 1000
  t.teardown(() => (clockOffsetMs = 0))
  expectProblem(t, await rotate(account, '203.0.113.7'), 409, 'session_key_not_replaceable')
  t.equal(engine().getLender(account.address)?.sessionAddress, session.address, 'nothing changed')
})

t.test('a rotation from another client at its bound is refused 429: the rotation moves a waiting place, it never adds one', async (t) => {
  const waitingAccount = privateKeyToAccount(generatePrivateKey())
  t.equal((await post(waitingAccount, '/lenders/register', policy(), '192.0.2.9', crypto.randomUUID())).status, 201, 'the other client\'s one waiting registration')
  const account = privateKeyToAccount(generatePrivateKey())
  const registered = await post(account, '/lenders/register', policy(), '192.0.2.10', crypto.randomUUID())
  t.equal(registered.status, 201)
  const refused = await rotate(account, '192.0.2.9')
  expectProblem(t, refused, 429, 'lender_registrations_client_full')
  t.equal(engine().getLender(account.address)?.sessionAddress, registered.body.sessionKey.address, 'nothing changed')
  t.equal(waiting().waitingFrom('192.0.2.9'), 1)
  t.equal(waiting().waitingFrom('192.0.2.10'), 1)
})

/** A proxy to the service that cuts the connection instead of answering the first POST /lenders/register. */
async function losingProxy(): Promise<{ url: string; lost: () => number; close: () => Promise<void> }> {
  let lost = 0
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name))) as Record<string, string>
    const upstream = await fetch(`${h.url}${req.url}`, { method: req.method!, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) })
    const body = Buffer.from(await upstream.arrayBuffer())
    if (req.method === 'POST' && req.url === '/lenders/register' && lost === 0) {
      lost++
      req.socket.destroy()
      return
    }
    res.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([name]) => name !== 'content-encoding' && name !== 'transfer-encoding')))
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lost: () => lost,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

t.test('the SDK: its registration\'s answer lost, its retry gets the replay and it asks for a new session key, returning it', async (t) => {
  const proxy = await losingProxy()
  t.teardown(() => proxy.close())
  const account = privateKeyToAccount(generatePrivateKey())
  const sdk = new AgentCredit({ baseUrl: proxy.url, account })
  const registration = await sdk.registerLender(policy())
  t.equal(proxy.lost(), 1, 'the first answer was lost')
  t.type(registration.sessionKey.privateKey, 'string', 'the SDK returns a private key')
  t.equal(privateKeyToAddress(registration.sessionKey.privateKey as Hex), registration.sessionKey.address)
  t.equal(engine().getLender(account.address)?.sessionAddress, registration.sessionKey.address, 'the registration\'s session wallet is that key\'s')
})
