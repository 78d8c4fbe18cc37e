// The MCP server's session-key store names a key's file by the address the key derives, never by the text the service
// answered beside it (a review's finding): a hostile service cannot place a file outside the directory or under
// another wallet's name.
import t, { type Test } from 'tap'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { SessionKeyStore } from '../../src/mcp/session-keys.ts'

const LENDER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

function store(t: Test): { keys: SessionKeyStore; parent: string; dir: string } {
  const parent = mkdtempSync(join(tmpdir(), 'session-keys-'))
  t.teardown(() => rmSync(parent, { recursive: true, force: true }))
  const dir = join(parent, 'keys')
  return { keys: new SessionKeyStore(dir), parent, dir }
}

t.test('the file is named by the key\'s own address', async (t) => {
  const { keys, dir } = store(t)
  await keys.prepare()
  const privateKey = generatePrivateKey()
  const { address } = privateKeyToAccount(privateKey)
  const path = await keys.save({ address: address.toLowerCase(), privateKey }, LENDER)
  t.equal(path, join(dir, `${address}.json`))
  t.equal(JSON.parse(readFileSync(path, 'utf8')).privateKey, privateKey)
})

t.test('an address that is a path, or another wallet\'s, is refused and nothing is written', async (t) => {
  const { keys, parent, dir } = store(t)
  await keys.prepare()
  const privateKey = generatePrivateKey()
  await t.rejects(keys.save({ address: '../escaped', privateKey }, LENDER), /but the key is 0x/)
  await t.rejects(keys.save({ address: privateKeyToAccount(generatePrivateKey()).address, privateKey }, LENDER), /but the key is 0x/)
  await t.rejects(keys.save({ address: privateKeyToAccount(privateKey).address, privateKey: 'not a key' }, LENDER), /not a private key/)
  t.same(readdirSync(dir), [], 'nothing in the directory')
  t.same(readdirSync(parent), ['keys'], 'nothing beside it')
})
