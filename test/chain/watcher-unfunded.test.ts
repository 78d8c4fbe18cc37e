// Issue 10, hole 2: an unfunded holder costs the watcher a membership entry only. It is not read and takes no watch
// slot; a transfer naming it makes it watched (and read); after the window it is forgotten.
import t from 'tap'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { WalletWatcher } from '../../src/chain/watcher.ts'
import { setupDevnet, USDC } from './fixtures/devnet.ts'

t.test('unfunded holders: membership only, promoted by a transfer, forgotten after the window', async (t) => {
  const f = await setupDevnet(t)
  const { network } = f
  let now = Date.now()
  const watcher = new WalletWatcher([network], { pollIntervalMs: 50, holdersMax: 1, unfundedWindowMs: 60_000, nowMs: () => now })
  t.teardown(() => watcher.stop())
  watcher.start()
  const funded = privateKeyToAddress(generatePrivateKey())
  const idle = privateKeyToAddress(generatePrivateKey())
  const sybils = Array.from({ length: 50 }, () => privateKeyToAddress(generatePrivateKey()))
  for (const holder of [funded, idle, ...sybils]) watcher.watchWhenFunded(network.slug, holder)
  const status = () => watcher.status()[0] as { holders: number; unfunded: number }
  t.same([status().holders, status().unfunded], [0, 52], '52 unfunded holders, none in the watch cap of 1')
  t.ok(watcher.hasRoom(network.slug), 'the cap is untouched')
  await f.transfer(f.actor('lender'), funded, 5n * USDC)
  await watcher.waitFor(() => watcher.spendableAtomic(network.slug, 'USDC', funded) === 0n && watcher.holding(network.slug, 'USDC', funded)?.balanceAtomic === 5n * USDC, 10_000)
  t.same([status().holders, status().unfunded], [1, 51], 'the funded one is watched and read; the rest wait')
  t.equal(watcher.holding(network.slug, 'USDC', idle), undefined, 'an unfunded holder is never read')
  now += 60_000
  await watcher.waitFor(() => status().unfunded === 0, 10_000)
  t.notOk(watcher.isWaitingForFunds(network.slug, idle), 'after the window the unfunded are forgotten')
  watcher.watchWhenFunded(network.slug, idle)
  t.ok(watcher.isWaitingForFunds(network.slug, idle), 're-armed by asking again')
})
