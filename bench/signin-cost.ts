// What a sign-in costs the service when a stranger signs in with free wallets (branch `outsider9`): N fresh wallets
// sign in once each (GET /auth/nonce, POST /auth/session) over HTTP against the real service and the embedded devnet,
// in process; the heap after a full GC and the LMDB pages in use are compared with before (per sign-in), and the
// service thread's CPU per sign-in is the process's CPU less the client's own (the keys made and the messages signed
// before, outside the measured loop); the bounds on sign-ins are lifted for it (test/fixtures/service.ts testConfig).
// A session is kept in the store for sessionTtlSeconds (24 h). Then, against a second service with the default bounds
// and the loopback trusted as a proxy: how many sign-ins one client address gets before 429 sign_ins_client_limited
// (signInsPerClientPerHour), and how many strangers with an address each get before 503 sign_ins_exhausted
// (signInsPerHour) at the pace of one sequential client.
// Run: node --expose-gc --import tsx bench/signin-cost.ts [N] (default 2000).
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { heapAfterGc, pagesInUse as pagesOf } from './fixtures/store-cost.ts'
import { serviceDefaults } from '../src/app/config.ts'
import { startHarness, type Harness } from '../test/fixtures/service.ts'

const N = Number(process.argv[2] ?? 2000)
const h = await startHarness({})
const heap = heapAfterGc
const pagesInUse = (): Promise<number> => pagesOf(h.dataDir)
const signInTo = async (h: Harness, account: ReturnType<typeof privateKeyToAccount>, from?: string): Promise<number> => {
  const nonce = (await (await fetch(`${h.url}/auth/nonce`)).json()) as { nonce: string; domain: string }
  const message = createSiweMessage({ domain: nonce.domain, address: account.address, uri: h.url, version: '1', chainId: h.network.chainId, nonce: nonce.nonce })
  const signature = await account.signMessage({ message })
  const headers = { 'content-type': 'application/json', ...(from === undefined ? {} : { 'x-forwarded-for': from }) }
  return (await fetch(`${h.url}/auth/session`, { method: 'POST', headers, body: JSON.stringify({ message, signature }) })).status
}
const signIn = (account: ReturnType<typeof privateKeyToAccount>): Promise<number> => signInTo(h, account)

/** Sign-ins of fresh wallets, each from `from(i)`, until the first that is not 201: how many were, and that status. */
const untilRefused = async (bounded: Harness, from: (i: number) => string, max: number): Promise<{ admitted: number; refusedWith: number | null }> => {
  for (let i = 0; i < max; i++) {
    const status = await signInTo(bounded, privateKeyToAccount(generatePrivateKey()), from(i))
    if (status !== 201) return { admitted: i, refusedWith: status }
  }
  return { admitted: max, refusedWith: null }
}
try {
  for (let i = 0; i < 50; i++) await signIn(privateKeyToAccount(generatePrivateKey()))
  const accounts = Array.from({ length: N }, () => privateKeyToAccount(generatePrivateKey()))
  // The client's own CPU: one message signed per account, as the loop below does.
  const clientCpu = process.cpuUsage()
  for (const a of accounts.slice(0, 200)) await a.signMessage({ message: createSiweMessage({ domain: 'example.com', address: a.address, uri: h.url, version: '1', chainId: 1, nonce: 'abcdefgh12345678' }) })
  const clientUsPerSign = ((c) => (c.user + c.system) / 200)(process.cpuUsage(clientCpu))
  const heapBefore = heap()
  const bytesBefore = await pagesInUse()
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  for (const a of accounts) {
    const status = await signIn(a)
    if (status !== 201) throw new Error(`sign-in: ${status}`)
  }
  const wallMs = performance.now() - t0
  const used = process.cpuUsage(cpu)
  const heapAfter = heap()
  const bytesAfter = await pagesInUse()
  const bounded = await startHarness({ config: { signInsPerClientPerHour: serviceDefaults.signInsPerClientPerHour, signInsPerHour: serviceDefaults.signInsPerHour, trustedProxies: ['127.0.0.1'] } })
  let oneClient, manyClients
  try {
    oneClient = await untilRefused(bounded, () => '203.0.113.7', 10_000)
    // A fresh address each (10.x.y.z): only the bound on all clients holds them.
    manyClients = await untilRefused(bounded, (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 100_000)
  } finally {
    await bounded.stop()
  }
  console.log(JSON.stringify({
    signIns: N,
    heapBytesPerSignIn: Math.round((heapAfter - heapBefore) / N),
    lmdbBytesPerSignIn: Math.round((bytesAfter - bytesBefore) / N),
    serviceCpuUsPerSignIn: Math.round((used.user + used.system) / N - clientUsPerSign),
    signInsPerSecondOneClient: Math.round(N / (wallMs / 1000)),
    atDefaultBounds: { oneClientAddress: oneClient, anAddressEach: manyClients },
  }))
} finally {
  await h.stop()
}
