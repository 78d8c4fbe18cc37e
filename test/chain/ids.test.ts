// On-chain keys: a job's key is keccak256(utf8(jobId)); an offer's key is salted with the data directory's secret,
// equal to Solidity's keccak256(abi.encodePacked(keySalt, offerId)), and the salt is made once and kept durably.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { encodePacked, keccak256, stringToHex, zeroHash, type Hex } from 'viem'
import { ensureKeySalt } from '../../src/chain/key-salt.ts'
import { idKey, isKeySalt, KeySaltError, newKeySalt, offerKey, legacyJobKey } from '../../src/chain/ids.ts'
import { Store } from '../../src/store/index.ts'
import { tempDataDir } from '../fixtures/service.ts'

t.test('a job key is keccak256 of the job id, as the client computes it when funding', async (t) => {
  t.equal(legacyJobKey('job_1'), keccak256(stringToHex('job_1')))
  t.equal(legacyJobKey('job_ü'), idKey('job_ü'), 'UTF-8, the same rule as the v1 ids')
})

t.test('an offer key is keccak256(abi.encodePacked(bytes32 keySalt, string offerId))', async (t) => {
  for (let i = 0; i < 20; i++) {
    const salt = newKeySalt()
    const offerId = `off_${i}${i % 3 === 0 ? 'é' : ''}`
    t.equal(offerKey(salt, offerId), keccak256(encodePacked(['bytes32', 'string'], [salt, offerId])))
  }
})

t.test('offer keys under salts taken in turn are each their own salt\'s (the last salt checked is kept)', async (t) => {
  const salts = [newKeySalt(), newKeySalt(), newKeySalt()]
  for (let i = 0; i < 30; i++) {
    const salt = salts[(i * 7) % 3] as Hex
    const offerId = `off_${i}${i % 4 === 0 ? '✓' : ''}`
    t.equal(offerKey(salt, offerId), keccak256(encodePacked(['bytes32', 'string'], [salt, offerId])))
  }
  t.equal(offerKey(zeroHash, ''), keccak256(zeroHash), 'an empty id: the salt alone')
})

t.test('the salt makes offer keys unguessable and distinct across data directories', async (t) => {
  const a = newKeySalt()
  const b = newKeySalt()
  t.ok(isKeySalt(a) && isKeySalt(b))
  t.not(a, b, 'two salts differ')
  t.not(offerKey(a, 'off_1'), offerKey(b, 'off_1'), 'the same offer id in two data directories has two keys')
  t.not(offerKey(a, 'off_1'), idKey('off_1'), 'not the unsalted key anyone can compute')
  t.not(offerKey(a, 'off_1'), offerKey(a, 'off_2'))
})

t.test('a malformed salt is refused, never silently used', async (t) => {
  offerKey(newKeySalt(), 'off_1')
  for (const bad of ['0x', '0x12', `0x${'g'.repeat(64)}`, `0x${'ab'.repeat(33)}`, 'ab'.repeat(32)]) {
    t.throws(() => offerKey(bad as Hex, 'off_1'), KeySaltError, JSON.stringify(bad))
  }
})

t.test('the key salt is made once per data directory and survives a reopen', async (t) => {
  const root = tempDataDir('key-salt-')
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const first = await Store.open({ dataDir: join(root, 'a') })
  const salt = await ensureKeySalt(first)
  t.ok(isKeySalt(salt))
  t.equal(await ensureKeySalt(first), salt, 'a second call returns the same salt')
  const concurrent = await Promise.all([ensureKeySalt(first), ensureKeySalt(first)])
  t.same(concurrent, [salt, salt])
  await first.close()
  const reopened = await Store.open({ dataDir: join(root, 'a') })
  t.equal(await ensureKeySalt(reopened), salt, 'the salt read back after a reopen')
  await reopened.close()
  const other = await Store.open({ dataDir: join(root, 'b') })
  t.not(await ensureKeySalt(other), salt, 'another data directory gets another salt')
  await other.close()
})

t.test('two first calls racing on a fresh directory agree on one salt', async (t) => {
  const root = tempDataDir('key-salt-race-')
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const store = await Store.open({ dataDir: join(root, 'a') })
  const [x, y] = await Promise.all([ensureKeySalt(store), ensureKeySalt(store)])
  t.equal(x, y)
  await store.close()
})
