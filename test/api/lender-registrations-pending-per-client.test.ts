// One client cannot hold every new lender off: at most lendersPendingPerClientMax registrations from one client address
// (an IPv6 client's /64) wait for their session wallet's first funds at once; the next is 429
// lender_registrations_client_full with Retry-After, and records nothing. Funding one, or the sweep removing one, frees
// its place; other clients register meanwhile. Real service behind a trusted proxy (X-Forwarded-For names the client)
// and anvil; the service's clock is moved by the test.
import t from 'tap'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { ChainAgent } from '../../src/client/chain.ts'
import type { Reply } from '../../src/client/client.ts'
import { clientKeyOf } from '../../src/http/client-key.ts'
import { fundedAccount, signedIn, startHarness, USDC, usdc } from '../fixtures/service.ts'
import { expectDocumented, expectProblem, openApiDocument } from './fixtures/api.ts'

const TTL_SECONDS = 3600
const SWEEP_INTERVAL_SECONDS = 60
let nowMs = Date.now()
// The harness's requests reach the service from the loopback address: as a proxy trusted to forward the client's.
const h = await startHarness({
  clock: () => nowMs,
  config: { lenderUnfundedTtlSeconds: TTL_SECONDS, lendersPendingPerClientMax: 2, trustedProxies: ['127.0.0.1'] },
})
t.teardown(() => h.stop())

const policy = () => ({ availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B'] })

interface Registration {
  reply: Reply
  account: PrivateKeyAccount
}

/** A wallet signs in and registers, its request forwarded for client address `from`. */
async function register(from: string, account: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey())): Promise<Registration> {
  const client = await signedIn(h.url, account)
  const response = await fetch(`${h.url}/lenders/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${client.token}`, 'content-type': 'application/json', 'x-forwarded-for': from },
    body: JSON.stringify(policy()),
  })
  return { reply: { status: response.status, headers: response.headers, body: await response.json() }, account }
}

async function registered(from: string, account?: PrivateKeyAccount): Promise<Registration> {
  const registration = await register(from, account)
  if (registration.reply.status !== 201) throw new Error(`register from ${from}: ${registration.reply.status} ${JSON.stringify(registration.reply.body)}`)
  return registration
}

const lenders = () => h.app.service.engine.lendersPage(0, 1000, 1000).items.map((l) => l.address)
const waiting = () => h.app.service.waitingRegistrations

t.test('clientKeyOf: an IPv4 address is its own key; an IPv6 address counts by its /64, an IPv4-mapped one as its IPv4', async (t) => {
  t.equal(clientKeyOf('203.0.113.7'), '203.0.113.7')
  t.equal(clientKeyOf('2001:db8:1:2::5'), '2001:db8:1:2::/64')
  t.equal(clientKeyOf('2001:0db8:0001:0002:ffff:0000:0000:0009'), '2001:db8:1:2::/64', 'the full form (uWS writes it so) is the same /64')
  t.equal(clientKeyOf('2001:db8:1:3::1'), '2001:db8:1:3::/64')
  t.equal(clientKeyOf('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(clientKeyOf('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone is not part of the key')
  t.equal(clientKeyOf('::ffff:203.0.113.7'), '203.0.113.7')
  t.equal(clientKeyOf('0000:0000:0000:0000:0000:ffff:cb00:7107'), '203.0.113.7')
  t.equal(clientKeyOf('::1'), '0:0:0:0::/64')
  for (const odd of ['1::2::3', '1:2:3', '1:2:3:4:5:6:7:8:9', 'g::1', '::ffff:1.2.3', '::ffff:1.2.3.256', '1:2:3:4:5:6:7::8']) {
    t.equal(clientKeyOf(odd), odd, `${odd} does not parse: its own key`)
  }
})

t.test('a client with lendersPendingPerClientMax registrations waiting is refused 429 with Retry-After, nothing recorded; another client registers', async (t) => {
  const firstMs = nowMs
  await registered('203.0.113.7')
  nowMs += 10_000
  await registered('203.0.113.7')
  const before = lenders()
  const refused = await register('203.0.113.7')
  expectProblem(t, refused.reply, 429, 'lender_registrations_client_full')
  expectDocumented(t, await openApiDocument(h.url), 'post', '/lenders/register', refused.reply)
  t.equal(refused.reply.headers.get('retry-after'), String((firstMs + TTL_SECONDS * 1000 - nowMs) / 1000 + SWEEP_INTERVAL_SECONDS), 'when the sweep may remove the oldest')
  t.same(lenders(), before, 'nothing recorded')
  t.equal(h.app.service.engine.getLender(refused.account.address), undefined)
  t.equal(h.app.service.sessionKeyRecords.get(refused.account.address), undefined)
  t.equal(waiting().waitingFrom('203.0.113.7'), 2, 'the refusal takes no place')

  await registered('203.0.113.8')
  t.equal(waiting().waitingFrom('203.0.113.8'), 1, 'another client has its own count')
  expectProblem(t, (await register('203.0.113.7', refused.account)).reply, 429, 'lender_registrations_client_full', 'the refused wallet, again from the same client')
  await registered('198.51.100.1', refused.account)
  t.ok(h.app.service.engine.getLender(refused.account.address), 'and registers from another')
})

t.test('concurrent registrations from one client cannot all pass the bound', async (t) => {
  const replies = await Promise.all([1, 2, 3, 4].map(() => register('192.0.2.30')))
  t.same(replies.map((r) => r.reply.status).sort(), [201, 201, 429, 429], 'two registered, two refused')
  t.equal(waiting().waitingFrom('192.0.2.30'), 2)
})

t.test('an IPv6 client counts by its /64: other addresses in it are the same client', async (t) => {
  await registered('2001:db8:1:2::5')
  await registered('2001:db8:1:2:ffff::9')
  expectProblem(t, (await register('2001:db8:1:2::77')).reply, 429, 'lender_registrations_client_full')
  await registered('2001:db8:1:3::5')
  t.equal(waiting().waitingFrom('2001:db8:1:2::/64'), 2)
})

t.test('a registration whose session wallet is seen funded frees its place at once', async (t) => {
  const owner = await fundedAccount(h.devnet, h.network, usdc(100))
  const first = await registered('192.0.2.10', owner)
  await registered('192.0.2.10')
  expectProblem(t, (await register('192.0.2.10')).reply, 429, 'lender_registrations_client_full')
  const session = privateKeyToAccount(first.reply.body.sessionKey.privateKey)
  await new ChainAgent(h.network, owner).sendGas(session.address, 10n ** 17n)
  await new ChainAgent(h.network, owner).transferToken(USDC, session.address, usdc(100))
  await new ChainAgent(h.network, session).sendUnsigned(first.reply.body.setupTransactions[0])
  const watcher = h.app.service.watcher
  await watcher.waitFor(() => !h.app.service.engine.isParked(owner.address), 10_000)
  t.equal(waiting().waitingFrom('192.0.2.10'), 1, 'the funded lender no longer waits')
  await registered('192.0.2.10')
})

t.test('the sweep removing a waiting registration frees its place; a client with none waiting is forgotten', async (t) => {
  const clientsBefore = waiting().clients
  const old = await registered('192.0.2.20')
  await registered('192.0.2.20')
  t.equal(waiting().clients, clientsBefore + 1)
  expectProblem(t, (await register('192.0.2.20')).reply, 429, 'lender_registrations_client_full')
  nowMs += (TTL_SECONDS + 1) * 1000
  const removed: Address[] = await h.app.lenderSweep.run()
  t.ok(removed.includes(old.account.address), 'the sweep removes the client\'s registrations past their time')
  t.equal(waiting().waitingFrom('192.0.2.20'), 0)
  t.equal(waiting().waitingFrom('203.0.113.7'), 0, 'every removed registration frees its client\'s place')
  t.equal(waiting().clients, 0, 'no client is kept without a waiting registration')
  await registered('192.0.2.20')
})
