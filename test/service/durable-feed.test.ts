// The durable change feed (CreditService.onDurable) that the event stream and the inspector read: every commit's
// changes, once durable, in the engine's order; nothing for a refused command; a throwing listener breaks nothing.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Change } from '../../src/engine/types.ts'
import { signedIn, startHarness, USDC, usdc, type Harness } from '../fixtures/service.ts'

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h.stop()
})

const policy = (network: string) => ({
  availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [network], minFeeBps: 100, maxDurationSeconds: 3600, acceptedRiskBands: ['A', 'B'],
})

t.test('each acknowledged change reaches listeners once, after its commit, in commit order; refusals reach none', async (t) => {
  const seen: Change[][] = []
  const stop = h.app.service.onDurable((changes) => seen.push([...changes]))
  t.teardown(stop)
  // It breaks on the registrations' commits only (the chain followers commit too, on their own schedule).
  const throwing = h.app.service.onDurable((changes) => {
    if (changes.some((c) => c.kind === 'lender')) throw new Error('a broken listener')
  })
  t.teardown(throwing)
  const warnings: string[] = []
  const onWarning = (warning: Error & { code?: string }) => warnings.push(String(warning.code))
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))

  const accounts = [privateKeyToAccount(generatePrivateKey()), privateKeyToAccount(generatePrivateKey())]
  const clients = await Promise.all(accounts.map((a) => signedIn(h.url, a)))
  const before = seen.length
  const replies = await Promise.all(clients.map((c) => c.post('/lenders/register', policy(h.network.slug))))
  t.same(replies.map((r) => r.status), [201, 201], 'both registrations acknowledged despite a throwing listener')

  const lenderChanges = seen.slice(before).flat().filter((c) => c.kind === 'lender')
  t.same(lenderChanges.map((c) => c.id).sort(), accounts.map((a) => a.address).sort(), 'one lender change per registration')
  await h.app.service.store.durable()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings, ['DURABLE_LISTENER_FAILED', 'DURABLE_LISTENER_FAILED'], "each of the listener's errors is reported, not swallowed")

  const count = seen.length
  const twice = await clients[0]!.post('/lenders/register', policy(h.network.slug))
  t.equal(twice.status, 409)
  await h.app.service.store.durable()
  t.equal(seen.length, count, 'a refused command tells nobody')

  stop()
  throwing()
  await clients[1]!.post('/lenders/register', policy(h.network.slug))
  t.equal(seen.length, count, 'an unsubscribed listener hears nothing')
})
