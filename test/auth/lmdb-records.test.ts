// The LMDB implementation of AuthRecords: single use, expiry, persistence across reopen.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { LmdbAuthRecords } from '../../src/auth/lmdb-records.ts'

const dir = await mkdtemp(path.join(os.tmpdir(), 'auth-records-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as const

t.test('a nonce is consumed once, and never after its expiry', async (t) => {
  const records = new LmdbAuthRecords({ path: path.join(dir, 'a') })
  t.teardown(() => records.close())
  await records.putNonce({ nonce: 'n1', issuedAtMs: 0, expiresAtMs: 1000 })
  t.same(await records.getNonce('n1'), { nonce: 'n1', issuedAtMs: 0, expiresAtMs: 1000 })
  const results = await Promise.all([records.consumeNonce('n1', 10), records.consumeNonce('n1', 10), records.consumeNonce('n1', 10)])
  t.equal(results.filter((r) => r !== undefined).length, 1, 'exactly one concurrent consumer wins')
  t.equal(await records.getNonce('n1'), undefined)
  await records.putNonce({ nonce: 'n2', issuedAtMs: 0, expiresAtMs: 1000 })
  t.equal(await records.consumeNonce('n2', 1000), undefined, 'expired at its expiry')
  t.equal(await records.getNonce('n2'), undefined, 'and removed')
  t.equal(await records.consumeNonce('never', 0), undefined)
})

t.test('sessions persist across a reopen; pruning drops only what expired', async (t) => {
  const where = path.join(dir, 'b')
  const first = new LmdbAuthRecords({ path: where })
  await first.putSession({ tokenHash: 'h1', address, chainId: 1, issuedAtMs: 0, expiresAtMs: 100 })
  await first.putSession({ tokenHash: 'h2', address, chainId: 1, issuedAtMs: 0, expiresAtMs: 5000 })
  await first.putNonce({ nonce: 'old', issuedAtMs: 0, expiresAtMs: 50 })
  await first.close()
  const second = new LmdbAuthRecords({ path: where })
  t.teardown(() => second.close())
  t.same(await second.getSession('h2'), { tokenHash: 'h2', address, chainId: 1, issuedAtMs: 0, expiresAtMs: 5000 })
  t.equal(await second.pruneExpired(100), 2)
  t.equal(await second.getSession('h1'), undefined)
  t.ok(await second.getSession('h2'))
  t.equal(await second.getNonce('old'), undefined)
})
