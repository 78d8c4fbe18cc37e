// The store-backed AuthRecords the service runs (src/auth/store-records.ts): the nonce secret, used nonces recorded with their session, the per-wallet
// index, revocation, persistence across reopen.
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { StoreAuthRecords } from '../../src/auth/store-records.ts'
import { Store } from '../../src/store/index.ts'
import type { SessionRecord } from '../../src/auth/records.ts'

const dir = await mkdtemp(path.join(os.tmpdir(), 'auth-records-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as const
const other = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' as const
const session = (tokenHash: string, issuedAtMs: number, expiresAtMs = 5000, wallet: `0x${string}` = address): SessionRecord =>
  ({ tokenHash, address: wallet, chainId: 1, issuedAtMs, expiresAtMs })

t.test('a nonce opens one session: concurrent sign-ins with it, exactly one wins', async (t) => {
  const store = await Store.open({ dataDir: path.join(dir, 'a'), clock: () => 10 })
  t.teardown(() => store.close())
  const records = new StoreAuthRecords(store)
  t.equal(await records.isNonceUsed('n1'), false)
  const results = await Promise.all(['h1', 'h2', 'h3'].map((h) => records.openSession(session(h, 1), { nonce: 'n1', expiresAtMs: 1000 }, [])))
  t.same(results.filter(Boolean).length, 1, 'exactly one concurrent sign-in wins')
  t.equal(await records.isNonceUsed('n1'), true)
  t.equal((await records.sessionsOf(address)).length, 1, 'and only its session is written')
})

t.test('the secret is made once and kept; sessions persist; the index is per wallet, oldest first; revocation', async (t) => {
  const where = path.join(dir, 'b')
  const firstStore = await Store.open({ dataDir: where, clock: () => 10 })
  const first = new StoreAuthRecords(firstStore)
  const secret = Buffer.from(await first.nonceSecret()).toString('hex')
  t.match(secret, /^[0-9a-f]{64}$/)
  t.equal(Buffer.from(await first.nonceSecret()).toString('hex'), secret, 'the same secret twice')
  await first.openSession(session('h2', 2), { nonce: 'a', expiresAtMs: 100 }, [])
  await first.openSession(session('h1', 1), { nonce: 'b', expiresAtMs: 100 }, [])
  await first.openSession(session('h9', 3, 5000, other), { nonce: 'c', expiresAtMs: 100 }, [])
  await first.openSession(session('h3', 3, 50), { nonce: 'd', expiresAtMs: 100 }, [])
  await firstStore.close()
  const secondStore = await Store.open({ dataDir: where, clock: () => 60 })
  t.teardown(() => secondStore.close())
  const second = new StoreAuthRecords(secondStore)
  t.equal(Buffer.from(await second.nonceSecret()).toString('hex'), secret, 'the secret survives a reopen')
  t.same((await second.sessionsOf(address)).map((s) => s.tokenHash), ['h1', 'h2'], 'live sessions of the wallet, oldest first (h3 expired)')
  t.equal(await second.getSession('h3'), undefined, 'an expired session reads as absent')
  t.equal(await second.revokeSessions([session('h1', 1)]), 1)
  t.equal(await second.getSession('h1'), undefined)
  t.same((await second.sessionsOf(address)).map((s) => s.tokenHash), ['h2'])
  t.ok(await second.getSession('h9'), 'another wallet untouched')
})
