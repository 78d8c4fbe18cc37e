// What a stranger with free wallets can make the store keep by signing in is bounded: each session stays
// sessionTtlSeconds (a day). One client address (an IPv6 client's /64) opens at most signInsPerClientPerHour sessions
// an hour, at its default (600, a bucket of an hour's worth); the next sign-in is 429 sign_ins_client_limited with
// Retry-After and stores nothing (its nonce stays unused: the same signed message opens a session from elsewhere).
// All clients together open at most signInsPerHour (503 sign_ins_exhausted), a backstop for a stranger with many
// addresses. Real service behind a trusted proxy (X-Forwarded-For names the client) and anvil.
import t, { type Test } from 'tap'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { serviceDefaults } from '../../src/app/config.ts'
import type { Reply } from '../../src/client/client.ts'
import { AgentCredit } from '../../src/client/sdk.ts'
import { readyLender, signedIn, startHarness, usdc, type Harness } from '../fixtures/service.ts'
import { expectProblem, lenderThatLent } from '../api/fixtures/api.ts'

interface SignIn {
  message: string
  signature: string
}

/** A fresh wallet's (or `account`'s) signed sign-in message, on a fresh nonce. */
async function signedMessage(h: Harness, account: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey())): Promise<SignIn> {
  const nonce = (await (await fetch(`${h.url}/auth/nonce`)).json()) as { nonce: string; domain: string }
  const message = createSiweMessage({ domain: nonce.domain, address: account.address, uri: h.url, version: '1', chainId: h.network.chainId, nonce: nonce.nonce, issuedAt: new Date() })
  return { message, signature: await account.signMessage({ message }) }
}

async function send(h: Harness, from: string, signIn: SignIn): Promise<Reply> {
  const response = await fetch(`${h.url}/auth/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
    body: JSON.stringify(signIn),
  })
  return { status: response.status, headers: response.headers, body: await response.json() }
}

t.test('one client address opens signInsPerClientPerHour sessions (default 600), then 429 sign_ins_client_limited; other clients sign in', async (t) => {
  // The service's clock stands still (moved by the test): the bucket refills by the test's word only.
  let nowMs = Date.now()
  const h = await startHarness({
    clock: () => nowMs,
    config: { signInsPerClientPerHour: serviceDefaults.signInsPerClientPerHour, signInsPerHour: serviceDefaults.signInsPerHour, trustedProxies: ['127.0.0.1'] },
  })
  t.teardown(() => h.stop())
  t.equal(serviceDefaults.signInsPerClientPerHour, 600)
  const stranger = '2001:db8:1:2::5'
  for (let i = 0; i < serviceDefaults.signInsPerClientPerHour; i++) {
    // Another address of the same /64 is the same client.
    const reply = await send(h, i % 2 === 0 ? stranger : '2001:db8:1:2::77', await signedMessage(h))
    if (reply.status !== 201) t.fail(`sign-in ${i}: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
  const refusedSignIn = await signedMessage(h)
  const refused = await send(h, '2001:db8:1:2:ffff::1', refusedSignIn)
  expectProblem(t, refused, 429, 'sign_ins_client_limited', 'the 601st sign-in of the /64')
  t.equal(refused.headers.get('retry-after'), '6', 'a token comes back every 6 s')
  // Nothing was stored: the nonce is unused, so the same signed message opens its session from another client.
  const elsewhere = await send(h, '203.0.113.7', refusedSignIn)
  t.equal(elsewhere.status, 201, 'another client address signs in, with the refused message itself')
  const otherSlash64 = await send(h, '2001:db8:1:3::5', await signedMessage(h))
  t.equal(otherSlash64.status, 201, 'another /64 is another client')
  nowMs += 6_000
  t.equal((await send(h, stranger, await signedMessage(h))).status, 201, '6 s later the client signs in once more')
  expectProblem(t, await send(h, stranger, await signedMessage(h)), 429, 'sign_ins_client_limited', 'and not twice')
  // The budgets are published: the catalog's auth and llms.txt.
  const catalog = (await (await fetch(`${h.url}/.well-known/service.json`)).json()) as { auth: Record<string, unknown> }
  t.match(catalog.auth, { signInsPerClientPerHour: 600, signInsPerHour: serviceDefaults.signInsPerHour }, 'the catalog\'s auth')
  t.match(await (await fetch(`${h.url}/llms.txt`)).text(), new RegExp(`600 an hour\\s+per client address \\(429 sign_ins_client_limited beyond\\), ${serviceDefaults.signInsPerHour} an hour from all clients`), 'llms.txt')
})

t.test('all clients together open signInsPerHour sessions (a minute\'s worth at once), then 503 sign_ins_exhausted', async (t) => {
  // 120 an hour: a bucket of 2, one token back every 30 s.
  const nowMs = Date.now()
  const h = await startHarness({ clock: () => nowMs, config: { signInsPerClientPerHour: serviceDefaults.signInsPerClientPerHour, signInsPerHour: 120, trustedProxies: ['127.0.0.1'] } })
  t.teardown(() => h.stop())
  t.equal((await send(h, '203.0.113.1', await signedMessage(h))).status, 201)
  t.equal((await send(h, '203.0.113.2', await signedMessage(h))).status, 201)
  const refusedSignIn = await signedMessage(h)
  const refused = await send(h, '203.0.113.3', refusedSignIn)
  expectProblem(t, refused, 503, 'sign_ins_exhausted', 'a third client, past every client\'s bound')
  t.equal(refused.headers.get('retry-after'), '30')
  const wrongNonce = await send(h, '203.0.113.4', { ...refusedSignIn, signature: `0x${'00'.repeat(65)}` })
  t.equal(wrongNonce.status, 401, 'a sign-in refused for its own reason is told that reason: the budget is charged only for a session about to be stored')
})

/** Strangers sign in fresh wallets, each from another IPv6 /64, until all clients' bucket refuses them. */
async function flood(t: Test, h: Harness, round: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const reply = await send(h, `2001:db8:${round}:${i.toString(16)}::1`, await signedMessage(h))
    if (reply.status === 503) {
      expectProblem(t, reply, 503, 'sign_ins_exhausted', 'the strangers emptied all clients\' bucket')
      return
    }
  }
  t.fail('the flood never emptied all clients\' bucket')
}

async function refresh(h: Harness, token: string): Promise<Reply> {
  const response = await fetch(`${h.url}/auth/session/refresh`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '198.51.100.20' } })
  return { status: response.status, headers: response.headers, body: await response.json() }
}

t.test('strangers holding all clients\' sign-ins exhausted do not lock out an agent that uses the service; a fresh wallet stays refused', async (t) => {
  // The finding: ~120 IPv6 /64s signing in fresh wallets hold signInsPerHour's bucket empty, and every new session was
  // refused 503, an agent's whose session was about to expire included. 240 an hour: a bucket of 4, a frozen clock.
  const startMs = Date.now()
  let nowMs = startMs
  const h = await startHarness({ clock: () => nowMs, config: { signInsPerClientPerHour: serviceDefaults.signInsPerClientPerHour, signInsPerHour: 600, trustedProxies: ['127.0.0.1'] } })
  t.teardown(() => h.stop())
  // An agent with a session only; a lender that has paid a lease (standing); an SDK agent
  // that renews its session 40 h before its end (so at its next call: a day's session is shorter).
  const agentAccount = privateKeyToAccount(generatePrivateKey())
  const agent = await signedIn(h.url, agentAccount)
  // Standing: the lender has paid a lease (a funded wallet alone is none: outsider13's finding).
  const lender = await lenderThatLent(h, await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(10) }), 'job_signin_bounds_standing')
  t.equal((await lender.client.call('DELETE', '/auth/sessions')).status, 200, 'the lender holds no session')
  const sdk = new AgentCredit({ baseUrl: h.url, account: privateKeyToAccount(generatePrivateKey()), renewBeforeMs: 40 * 3600_000 })
  const sdkToken = await sdk.token()
  nowMs += 23 * 3600_000
  await flood(t, h, '1')
  expectProblem(t, await send(h, '203.0.113.50', await signedMessage(h)), 503, 'sign_ins_exhausted', 'a fresh wallet is refused: what strangers make the store keep stays bounded')
  // The agent refreshes its live session in place: the same token, a day from now, no new stored session.
  const refreshed = await refresh(h, agent.token as string)
  t.equal(refreshed.status, 200, 'the agent refreshes its session an hour before its end, through the flood')
  t.equal(Date.parse(refreshed.body.expiresAt), nowMs + 24 * 3600_000, 'to a day from now')
  t.equal(await sdk.token(), sdkToken, 'the SDK renews by refreshing: the same token, through the flood')
  nowMs = startMs + 25 * 3600_000
  t.equal((await refresh(h, agent.token as string)).status, 200, 'an hour past its first expiry, the agent\'s token still works')
  t.equal((await refresh(h, 'A'.repeat(43))).status, 401, 'a token that is no session\'s refreshes nothing')
  // A wallet with standing signs in through the flood, held to its own bounds (it holds no session now).
  await flood(t, h, '2')
  t.equal((await send(h, '203.0.113.51', await signedMessage(h, lender.account))).status, 201, 'the lender signs in, past the empty bucket')
  t.equal((await send(h, '203.0.113.51', await signedMessage(h, lender.account))).status, 201, 'and again: sessionsPerWalletMax bounds its sessions')
  // A wallet without standing that holds a live session (an agent restarted, its token lost) signs in by replacing it.
  const sessions = () => [...h.app.service.store.collection('auth-wallet-sessions').iterate(`${agentAccount.address}:`)].length
  t.equal(sessions(), 1)
  t.equal((await send(h, '203.0.113.53', await signedMessage(h, agentAccount))).status, 201, 'the agent signs in again through the flood')
  t.equal(sessions(), 1, 'in place of its session: the store keeps nothing more')
  t.equal((await refresh(h, agent.token as string)).status, 401, 'the replaced token ended')
  expectProblem(t, await send(h, '203.0.113.52', await signedMessage(h)), 503, 'sign_ins_exhausted', 'a fresh wallet is still refused')
})
