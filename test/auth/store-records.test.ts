// The store-backed AuthRecords the service runs (src/auth/store-records.ts): single use, expiry, persistence across reopen.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { EXPIRED_NONCE_KEPT_MS, StoreAuthRecords } from '../../src/auth/store-records.ts'
import { Store } from '../../src/store/index.ts'

const dir = await mkdtemp(path.join(os.tmpdir(), 'auth-records-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as const
const T0 = 1_800_000_000_000

t.test('a nonce is consumed once, and never after its expiry', async (t) => {
  const store = await Store.open({ dataDir: path.join(dir, 'a'), clock: () => T0 })
  t.teardown(() => store.close())
  const records = new StoreAuthRecords(store)
  await records.putNonce({ nonce: 'n1', issuedAtMs: T0, expiresAtMs: T0 + 1000 })
  t.same(await records.getNonce('n1'), { nonce: 'n1', issuedAtMs: T0, expiresAtMs: T0 + 1000 })
  const results = await Promise.all([records.consumeNonce('n1', T0 + 10), records.consumeNonce('n1', T0 + 10), records.consumeNonce('n1', T0 + 10)])
  t.equal(results.filter((r) => r !== undefined).length, 1, 'exactly one concurrent consumer wins')
  t.equal(await records.getNonce('n1'), undefined)
  await records.putNonce({ nonce: 'n2', issuedAtMs: T0, expiresAtMs: T0 + 1000 })
  t.equal(await records.consumeNonce('n2', T0 + 1000), undefined, 'expired at its expiry')
  t.equal(await records.consumeNonce('never', T0), undefined)
  await records.putNonce({ nonce: 'n3', issuedAtMs: T0, expiresAtMs: T0 + 1000 })
  t.same(await records.getNonce('n3'), { nonce: 'n3', issuedAtMs: T0, expiresAtMs: T0 + 1000 }, 'an expired nonce is still read (siwe_nonce_expired)')
})

t.test('sessions persist across a reopen; pruning drops only what expired', async (t) => {
  const where = path.join(dir, 'b')
  let now = T0
  const first = await Store.open({ dataDir: where, clock: () => now })
  const records = new StoreAuthRecords(first)
  await records.putSession({ tokenHash: 'h1', address, chainId: 1, issuedAtMs: T0, expiresAtMs: T0 + 100 })
  await records.putSession({ tokenHash: 'h2', address, chainId: 1, issuedAtMs: T0, expiresAtMs: T0 + 5000 })
  await records.putNonce({ nonce: 'old', issuedAtMs: T0, expiresAtMs: T0 + 50 })
  await first.close()
  now = T0 + 100
  const second = await Store.open({ dataDir: where, clock: () => now })
  t.teardown(() => second.close())
  const reopened = new StoreAuthRecords(second)
  t.same(await reopened.getSession('h2'), { tokenHash: 'h2', address, chainId: 1, issuedAtMs: T0, expiresAtMs: T0 + 5000 })
  t.equal(await reopened.pruneExpired(), 1, 'the expired session')
  t.equal(await reopened.getSession('h1'), undefined)
  t.ok(await reopened.getSession('h2'))
  t.ok(await reopened.getNonce('old'), 'an expired nonce is kept a while, to be refused as expired')
  now = T0 + 50 + EXPIRED_NONCE_KEPT_MS
  t.equal(await reopened.pruneExpired(), 2, 'then pruned, with the session h2 that expired meanwhile')
  t.equal(await reopened.getNonce('old'), undefined)
})
