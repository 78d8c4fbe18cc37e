// outsider13: what one free wallet's session refreshes cost the service beside a plain read, at the wall clock (each
// refresh extends the session by the milliseconds since the last, a durable rewrite), and what they do to an honest
// agent's sign-in latency meanwhile. In process, real devnet, rate limit at its default. Run:
// node --import tsx test/api/outsider13-scripts/refresh-flood.ts [N] [concurrency]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedIn, startHarness } from '../../fixtures/service.ts'
import { CreditClient } from '../../../src/client/client.ts'

const N = Number(process.argv[2] ?? 4000)
const C = Number(process.argv[3] ?? 16)
const h = await startHarness({ config: { rateLimitPerSecond: 2000 } })
try {
  const client = await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
  const run = async (label: string, call: () => Promise<number>) => {
    let done = 0
    const statuses = new Map<number, number>()
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    await Promise.all(Array.from({ length: C }, async () => {
      while (done < N) {
        done++
        const s = await call()
        statuses.set(s, (statuses.get(s) ?? 0) + 1)
      }
    }))
    const ms = performance.now() - t0
    const used = process.cpuUsage(cpu)
    console.log(JSON.stringify({ label, n: N, perSecond: Math.round(N / (ms / 1000)), cpuUsPerCall: Math.round((used.user + used.system) / N), statuses: Object.fromEntries(statuses) }))
  }
  const signInLatency = async (label: string, flood?: Promise<void>) => {
    const times: number[] = []
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now()
      await signedIn(h.url, privateKeyToAccount(generatePrivateKey()))
      times.push(performance.now() - t0)
    }
    times.sort((a, b) => a - b)
    console.log(JSON.stringify({ label, signInMsMedian: Math.round(times[10]!), signInMsMax: Math.round(times[19]!) }))
    await flood
  }
  await run('GET /credit/state', async () => (await client.get('/credit/state')).status)
  await run('POST /auth/session/refresh', async () => (await client.call('POST', '/auth/session/refresh')).status)
  await signInLatency('idle')
  const flood = run('refresh during honest sign-ins', async () => (await client.call('POST', '/auth/session/refresh')).status)
  await signInLatency('during a refresh flood', flood)
  const flood2 = run('GET during honest sign-ins', async () => (await client.get('/credit/state')).status)
  await signInLatency('during a GET flood', flood2)
} finally {
  await h.stop()
}
