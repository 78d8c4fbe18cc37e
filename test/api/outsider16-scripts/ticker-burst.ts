// outsider16: what a burst of offers falling due in one chain second costs everyone else. In process (the harness's
// devnet and service, ticker on at 1,000 ms): BORROWERS attested borrowers each hold 100 live offers (no lender takes
// them: their asks are under the lender's minimum), plus a victim lender's lease on another borrower's offer that falls
// due in the same chain second. Measures the service's CPU while idle with those offers live (does a backlog that
// cannot match spin the ticker?), then, from the moment the follower observed the chain past them, how long until the
// victim lender's liquidity is back and every offer has ended, and a third borrower's request + match latency meanwhile.
// node --import tsx test/api/outsider16-scripts/ticker-burst.ts [BORROWERS]
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CreditClient } from '../../../src/client/client.ts'
import { advanceChainTime, creditRequest, readyLender, signedIn, startHarness, usdc } from '../../fixtures/service.ts'
import { backingSourceBody } from '../fixtures/api.ts'
import { cpuShare } from './cpu.ts'

const borrowers = Number(process.argv[2] ?? 10)
let now = Date.now()
const h = await startHarness({ clock: () => now, config: { dispatchIntervalMs: 1000, offerTtlSeconds: 120, leaseTtlSeconds: 60 } })
try {
  const lender = await readyLender(h, { minFeeBps: 500, liquidityAtomic: usdc(100) })
  console.log('idle, nothing live:', await cpuShare(3000))
  async function borrower(id: string) {
    const account = privateKeyToAccount(generatePrivateKey())
    const client = await signedIn(h.url, account)
    const reply = await client.post('/credit/backing-sources', await backingSourceBody(h, account.address, { sourceId: id, valueAtomic: usdc(100000), liquidationValueAtomic: usdc(100000), advanceRateBps: 5000 }))
    if (reply.status !== 201) throw new Error(JSON.stringify(reply.body))
    return { account, client, id }
  }
  // The victim: an offer the lender leases (fee 10 % >= its 5 % ask).
  const victim = await borrower('o16-victim')
  const v = await victim.client.post('/credit/request', creditRequest(h, victim.account.address, victim.id, usdc(5), usdc(1)))
  const m = await victim.client.post('/credit/match', { offerId: v.body.offer.offerId })
  if (m.body.lease == null) throw new Error(JSON.stringify(m.body))
  // The crowd: 100 offers each, fee 0.01 % (no lender's ask), all in the same chain second as far as possible.
  let t0 = Date.now()
  let made = 0
  for (let b = 0; b < borrowers; b++) {
    const who = await borrower(`o16-crowd-${b}`)
    await Promise.all(Array.from({ length: 100 }, async () => {
      const r = await who.client.post('/credit/request', creditRequest(h, who.account.address, who.id, usdc(5), 500n))
      if (r.body.decision === 'approved') made++
      else throw new Error(JSON.stringify(r.body))
    }))
  }
  console.log(`made ${made} unmatched offers in ${Date.now() - t0} ms`)
  console.log('idle, offers live and unmatched:', await cpuShare(3000))
  const profile = async () => ((await new CreditClient(h.url).get('/lenders?limit=1000')).body as any[]).find((l) => l.address === lender.account.address)
  // Past the lease (60 s) and the offers' TTL (120 s) at once.
  now = Math.max(now + 121_000, await advanceChainTime(h, 121))
  t0 = Date.now()
  const cpuStart = process.cpuUsage()
  let freedAt = 0
  const lat: number[] = []
  const third = await borrower('o16-third')
  while (Date.now() - t0 < 20_000) {
    const s = Date.now()
    const r = await third.client.post('/credit/request', creditRequest(h, third.account.address, third.id, usdc(5), usdc(1)))
    await third.client.post('/credit/match', { offerId: r.body.offer.offerId })
    lat.push(Date.now() - s)
    if (freedAt === 0 && (await profile()).leasesExpired === 1) freedAt = Date.now() - t0
    const crowdLeft = (await new CreditClient(h.url).get(`/credit/offers/off_${made + 1}`)).body.state
    if (freedAt > 0 && crowdLeft === 'expired') break
  }
  const used = process.cpuUsage(cpuStart)
  lat.sort((a, b) => a - b)
  console.log(`victim lease timed out (liquidity back) after ${freedAt} ms; last crowd offer ended after ${Date.now() - t0} ms; CPU ${((used.user + used.system) / 1000).toFixed(0)} ms`)
  console.log(`third borrower request+match+reads: n=${lat.length} p50 ${lat[Math.floor(lat.length / 2)]} ms max ${lat[lat.length - 1]} ms`)
  console.log('credit state', JSON.stringify((await new CreditClient(h.url).get('/credit/state')).body).slice(0, 400))
  console.log('idle after:', await cpuShare(3000))
} finally {
  await h.stop()
}
