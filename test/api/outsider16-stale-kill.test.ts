// An outsider's probe (outsider16): the ends a request at `liveOffersPerBorrowerMax` commits with its answer survive a
// SIGKILL right after the answer. The service runs as its own process (networks and config files, as an operator runs
// it); a borrower at the bound whose offers are past their TTL on the chain asks again and is approved; the process is
// killed at once; after the restart the stale offers are expired (not live again: the borrower would then hold three
// live offers, over the bound) and the approved offer is there, offered, exactly as answered.
// It fails if the ends were applied in memory but not written with the answer (or written after it), or if the
// answer were given before its commit was durable; also if start-up itself ended the stale offers (their end time
// would be the restart's, not the request's).
import t from 'tap'
import { createTestClient, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkChain } from '../../src/chain/clients.ts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { CreditClient } from '../../src/client/client.ts'
import { killAllServices, removeDir, startService, writeServiceFiles } from '../persistence/fixtures/child-service.ts'
import { creditRequest, tempDataDir, type Harness, usdc } from '../fixtures/service.ts'
import { backingSourceBody, until } from './fixtures/api.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(async () => {
  killAllServices()
  await devnet.stop()
})
const network = devnet.networks[0] as (typeof devnet.networks)[number]

t.test('the stale offers a request at the bound ended stay ended after a SIGKILL right after its answer', async (t) => {
  const dataDir = tempDataDir()
  const files = writeServiceFiles(devnet.accounts, devnet.networks, { offerTtlSeconds: 60, engine: { liveOffersPerBorrowerMax: 2 } })
  t.teardown(() => {
    removeDir(dataDir)
    removeDir(files.dir)
  })
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0' }
  let service = await startService(env)
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(service.url)
  await client.signIn(account)
  const source = await backingSourceBody({ devnet, url: service.url }, account.address, { sourceId: 'o16-kill', valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 })
  t.equal((await client.post('/credit/backing-sources', source)).status, 201)
  const h = { network } as unknown as Harness
  const ask = () => client.post('/credit/request', creditRequest(h, account.address, 'o16-kill', usdc(5), usdc(1)))
  const stale: string[] = []
  for (let i = 0; i < 2; i++) stale.push((await ask()).body.offer.offerId as string)
  t.equal((await ask()).status, 409, 'at the bound')

  const chain = createTestClient({ chain: networkChain(network), transport: http(network.rpcUrl), mode: 'anvil' })
  await chain.increaseTime({ seconds: 61 })
  await chain.mine({ blocks: 1 })
  // Once the service observed that block, the request ends both stale offers and is approved (each 409 before changes nothing).
  let approved: Record<string, any> | undefined
  await until(async () => {
    const reply = await ask()
    if (reply.status === 200) approved = reply.body
    return reply.status !== 409
  }, 20_000, 'the chain time observed past the offers\' TTL')
  t.equal(approved?.decision, 'approved', JSON.stringify(approved))
  const fresh = approved?.offer.offerId as string
  await service.stop('SIGKILL')

  service = await startService(env)
  t.teardown(() => service.stop('SIGKILL'))
  const reader = new CreditClient(service.url)
  for (const id of stale) {
    const offer = (await reader.get(`/credit/offers/${id}`)).body
    t.equal(offer.state, 'expired', `${id} stayed expired after the kill`)
    t.equal(offer.endReason, 'stale')
    // Ended by that request (its command's time), not by the start-up after the kill (a later time).
    t.equal(offer.endedAt, approved?.offer.createdAt, `${id} ended by the request at the bound`)
  }
  t.equal((await reader.get(`/credit/offers/${fresh}`)).body.state, 'offered', 'the approved offer is there, as answered')
  const again = new CreditClient(service.url)
  await again.signIn(account)
  const more = await again.post('/credit/request', creditRequest(h, account.address, 'o16-kill', usdc(5), usdc(1)))
  t.equal(more.body.decision, 'approved', 'one live offer: one more fits')
  t.equal((await again.post('/credit/request', creditRequest(h, account.address, 'o16-kill', usdc(5), usdc(1)))).status, 409, 'and then the bound again: the ended offers did not come back')
})
