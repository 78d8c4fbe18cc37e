// outsider16: an offer past its TTL under a lease that is still live (leased late in the offer's life: the lease's
// deadline is later than the offer's expiresAt). Neither the ticker nor a request may end it before the lease's
// deadline. Does the ticker count it as due and spin (run again each turn, its budget grown while "overdue")?
// Measures the service process's CPU while idle in that state, against idle before. Ticker on (1,000 ms).
// node --import tsx test/api/outsider16-scripts/ticker-leased-past-ttl.ts [OFFERS]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditClient } from '../../../src/client/client.ts'
import { advanceChainTime, creditRequest, readyLender, signedIn, startHarness, usdc } from '../../fixtures/service.ts'
import { backingSourceBody } from '../fixtures/api.ts'
import { cpuShare } from './cpu.ts'

const offers = Number(process.argv[2] ?? 3)
let now = Date.now()
const h = await startHarness({ clock: () => now, config: { dispatchIntervalMs: 1000, offerTtlSeconds: 120, leaseTtlSeconds: 60 } })
try {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = await signedIn(h.url, account)
  await client.post('/credit/backing-sources', await backingSourceBody(h, account.address, { sourceId: 'o16-late', valueAtomic: usdc(100000), liquidationValueAtomic: usdc(100000), advanceRateBps: 5000 }))
  const ids: string[] = []
  for (let i = 0; i < offers; i++) ids.push((await client.post('/credit/request', creditRequest(h, account.address, 'o16-late', usdc(5), usdc(1)))).body.offer.offerId)
  console.log('idle, offers live:', await cpuShare(3000))
  now = Math.max(now + 100_000, await advanceChainTime(h, 100))
  // The lender arrives late in the offers' life: its leases' deadlines (60 s) fall after the offers' expiresAt.
  const lender = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(1000) })
  await new Promise((r) => setTimeout(r, 1500))
  // The ticker may have matched them already (they are matchable); else match now.
  for (const id of ids) {
    const o = (await new CreditClient(h.url).get(`/credit/offers/${id}`)).body
    if (o.state === 'offered') console.log('match', JSON.stringify((await client.post('/credit/match', { offerId: id })).body).slice(-700))
  }
  const states = async () => Promise.all(ids.map(async (id) => { const o = (await new CreditClient(h.url).get(`/credit/offers/${id}`)).body; return `${o.state}:${o.expiresAt}:${o.currentLeaseId}` }))
  console.log('after 100 s', (await states()).join(' '))
  for (const id of ids) {
    const o = (await new CreditClient(h.url).get(`/credit/offers/${id}`)).body
    if (o.currentLeaseId) {
      const lease = (await lender.client.get(`/lenders/${lender.account.address}/actions`)).body.find((a: any) => a.lease?.offerId === id)
      console.log('lease deadline', lease?.lease?.expiresAt)
    }
  }
  now = Math.max(now + 21_000, await advanceChainTime(h, 21))
  console.log('after 121 s (offers past TTL, leases live)', (await states()).join(' '))
  console.log('idle, offers past TTL under live leases:', await cpuShare(3000))
  console.log('again:', await cpuShare(3000))
  console.log('overdue ms (engine):', (h.app.service.engine as any).dispatchOverdueMs?.(Date.now()))
  now = Math.max(now + 45_000, await advanceChainTime(h, 45))
  await new Promise((r) => setTimeout(r, 1500))
  console.log('after the leases\' deadlines', (await states()).join(' '))
  console.log('idle after:', await cpuShare(3000))
} finally {
  await h.stop()
}
