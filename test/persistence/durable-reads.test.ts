// Issue 10, hole 4: only durable state is shown, and ids are never reissued. With the group commit held (the store's
// test hook), a change is in memory but not on disk: a GET must not show it before it is durable. The service as a
// child process is SIGKILLed while a commit is held: after the restart no id minted before the kill (shown or not)
// is minted again for something else.
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { defaultDevnetNetworks, startDevnet } from '../../src/chain/devnet.ts'
import { CreditClient } from '../../src/client/client.ts'
import { startApp } from '../../src/app/app.ts'
import { CLEAN_SHUTDOWN_FILE } from '../../src/store/clean-shutdown.ts'
import { backingSourceBody } from '../api/fixtures/api.ts'
import { creditRequest, fundedAccount, tempDataDir, testConfig, type Harness, USDC, usdc } from '../fixtures/service.ts'
import { killAllServices, removeDir, startService, writeServiceFiles } from './fixtures/child-service.ts'

const devnet = await startDevnet({ networks: [defaultDevnetNetworks[0] as (typeof defaultDevnetNetworks)[number]] })
t.teardown(async () => {
  killAllServices()
  await devnet.stop()
})
const network = devnet.networks[0] as (typeof devnet.networks)[number]
// The fixtures read only `devnet` (the attester), `network` and `url` (the attested service) of a harness.
const h = { devnet, network } as unknown as Harness
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A fresh borrower signed in at `url` with an attested backing source `sourceId` of 1,000 USDC. */
async function borrowerWithSource(t: Test, url: string, sourceId: string) {
  const account = privateKeyToAccount(generatePrivateKey())
  const client = new CreditClient(url)
  await client.signIn(account)
  const source = await backingSourceBody({ devnet, url }, account.address, { sourceId, valueAtomic: usdc(1000), liquidationValueAtomic: usdc(1000), advanceRateBps: 5000 })
  t.equal((await client.post('/credit/backing-sources', source)).status, 201, `backing source ${sourceId} registered`)
  return { account, client }
}

t.test('a GET never shows a change whose commit is not durable yet', async (t) => {
  const dataDir = tempDataDir()
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  let held = false
  const app = await startApp(testConfig(dataDir), { devnet, holdCommitsWhile: () => held, validateResponses: true })
  t.teardown(() => {
    held = false
    return app.stop()
  })
  const lender = await fundedAccount(devnet, network, 0n)
  const client = new CreditClient(app.url)
  await client.signIn(lender)
  t.equal((await client.get('/lenders')).body.length, 0, 'no lender yet')

  held = true
  let durable = false
  const registered = client.post('/lenders/register', {
    availableLiquidityAtomic: usdc(100).toString(), asset: USDC, networks: [network.slug], minFeeBps: 100, maxDurationSeconds: 86_400, acceptedRiskBands: ['A', 'B', 'C'],
  })
  while (app.service.store.stats().pending === 0) await sleep(5)
  t.ok(app.service.engine.getLender(lender.address), 'the lender is in memory, its commit queued and held')
  // Each read records what it showed and whether the commit was durable when it answered.
  const shown: Array<{ path: string; showsLender: boolean; durable: boolean }> = []
  const read = (path: string, shows: (body: any) => boolean) =>
    client.get(path).then((reply) => shown.push({ path, showsLender: reply.status === 200 && shows(reply.body), durable }))
  const reads = [
    read('/lenders', (body) => body.some((l: { address: string }) => l.address === lender.address)),
    read(`/lenders/${lender.address}/wallet`, () => true),
    read('/credit/state', (body) => JSON.stringify(body).includes('"lenders":1') || body.counts?.lenders === 1),
  ]
  await sleep(300)
  t.same(shown.filter((s) => s.showsLender), [], 'while the commit is held no read has shown the lender')
  durable = true
  held = false
  t.equal((await registered).status, 201, 'the registration is acknowledged once durable')
  await Promise.all(reads)
  t.same(shown.filter((s) => s.showsLender && !s.durable), [], 'every read that shows the lender answered after its commit was durable')
  t.ok(shown.some((s) => s.path === '/lenders' && s.showsLender), 'and the list, built while held, shows it once durable')
  const start = Date.now()
  t.equal((await client.get('/health')).status, 200, 'with nothing pending a read answers at once')
  t.ok(Date.now() - start < 5_000)
})

t.test('after a SIGKILL with a commit held, no id minted before the kill is minted again', async (t) => {
  const files = writeServiceFiles(devnet.accounts, devnet.networks, { offerTtlSeconds: 7 * 24 * 3600 })
  t.teardown(() => removeDir(files.dir))
  const dataDir = tempDataDir()
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const holdFile = join(files.dir, 'hold')
  const env = { ...files.env, DATA_DIR: dataDir, DISPATCH_INTERVAL_MS: '0', AGENT_CREDIT_TEST_HOLD_COMMITS_FILE: holdFile }
  let service = await startService(env)

  const { account: borrowerX, client: x } = await borrowerWithSource(t, service.url, 'src-x')
  const first = await x.post('/credit/request', creditRequest(h, borrowerX.address, 'src-x', usdc(7), usdc(1)))
  t.equal(first.body.decision, 'approved')
  const durableId = first.body.offer.offerId as string

  writeFileSync(holdFile, '')
  const pending = x.post('/credit/request', creditRequest(h, borrowerX.address, 'src-x', usdc(5), usdc(1))).catch(() => undefined)
  await sleep(300)
  const seen: string[] = []
  const guesses = ['off_1', 'off_2', 'off_3'].filter((id) => id !== durableId)
  const peeks = guesses.map((id) => x.get(`/credit/offers/${id}`).then((r) => { if (r.status === 200) seen.push(id) }, () => undefined))
  await sleep(300)
  await service.stop('SIGKILL')
  await Promise.all([pending, ...peeks])
  t.same(seen, [], 'the offer whose commit was held was never shown')
  rmSync(holdFile)
  t.notOk(existsSync(holdFile))

  service = await startService(env)
  t.teardown(() => service.stop('SIGKILL'))
  const { account: borrowerY, client: y } = await borrowerWithSource(t, service.url, 'src-y')
  const after = await y.post('/credit/request', creditRequest(h, borrowerY.address, 'src-y', usdc(3), usdc(1)))
  t.equal(after.body.decision, 'approved')
  const newId = after.body.offer.offerId as string
  t.not(newId, durableId, 'not the durable offer\'s id')
  t.notOk(guesses.includes(newId), `not an id the killed process may have minted (${newId})`)
  t.equal(newId, `off_${2 ** 32 + 1}`, 'the offer sequence jumped to the next multiple of 2^32')
  const old = await y.get(`/credit/offers/${durableId}`)
  t.equal(old.body.borrower, borrowerX.address, 'the durable offer is still borrower X\'s')
  t.equal(old.body.amountAtomic, usdc(7).toString())

  await service.stop('SIGTERM')
  t.ok(existsSync(join(dataDir, CLEAN_SHUTDOWN_FILE)), 'a clean stop records it: the next start skips the deep check')
  service = await startService({ ...env, AGENT_CREDIT_TEST_HOLD_COMMITS_FILE: '' })
  const y2 = new CreditClient(service.url)
  y2.token = y.token
  const again = await y2.post('/credit/request', creditRequest(h, borrowerY.address, 'src-y', usdc(2), usdc(1)))
  t.equal(again.body.offer.offerId, `off_${2 ** 32 + 2}`, 'after a clean stop the sequence goes on, no jump')
  t.notOk(existsSync(join(dataDir, CLEAN_SHUTDOWN_FILE)), 'the running service removed the record when it opened the store')
  await service.stop('SIGKILL')
  t.notOk(existsSync(join(dataDir, CLEAN_SHUTDOWN_FILE)), 'so a kill leaves none: the next start runs the deep check')
})
