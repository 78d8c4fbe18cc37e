// The service refuses to start on a data directory it cannot trust, says why on stderr, exits non-zero, and leaves
// every file as it found it: a damaged data.mdb (header or data pages) and snapshots of a schema version newer than
// this release reads (recorded in the schema meta record, or only on one stored snapshot).
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { open } from 'lmdb'
import { getContractAddress, type Address } from 'viem'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { demoAccounts } from '../../src/chain/devnet.ts'
import { Store, storedValueEncoding } from '../../src/store/index.ts'
import { dataDigests, killAllServices, removeDir, runServiceToExit, writeServiceFiles } from './fixtures/child-service.ts'
import { freePagePastTheEnd } from '../store/fixtures/free-list.ts'
import { tempDataDir } from '../fixtures/service.ts'

const accounts = demoAccounts()
const contract = (nonce: bigint): Address => getContractAddress({ from: accounts.deployer.address, nonce })
// No chain runs: the store is opened before any RPC is made, so a refused start never reaches the network.
const network: NetworkConfig = {
  slug: 'devnet-a',
  chainId: 31337,
  caip2: 'eip155:31337',
  rpcUrl: 'http://127.0.0.1:9',
  creditContract: contract(3n),
  identityRegistry: contract(1n),
  reputationRegistry: contract(2n),
  multicall3: '0xcA11bde05977b3631167028862bE2a173976CA11',
  tokens: [{ symbol: 'USDC', address: contract(0n), decimals: 6, eip712Name: 'USD Coin', eip712Version: '2' }],
  x402SelfFacilitate: false,
  confirmations: 1,
  pollingIntervalMs: 50,
  operatorKeyEnv: undefined,
  operatorPrivateKey: undefined, leaseSignerKeyEnv: undefined, leaseSignerPrivateKey: undefined,
  facilitatorKeyEnv: undefined, facilitatorPrivateKey: undefined,
}
const files = writeServiceFiles(accounts, [network])
t.teardown(() => {
  killAllServices()
  removeDir(files.dir)
})

/** A data directory as the service leaves it: engine records and live actors, written through the store. */
async function populated(snapshotVersions?: { offer: number }): Promise<string> {
  const dataDir = tempDataDir('agent-credit-refuse-')
  const store = await Store.open({ dataDir, ...(snapshotVersions ? { snapshotVersions } : {}) })
  for (let round = 0; round < 10; round++) {
    await store.commit({
      changes: [
        { kind: 'meta', id: 'engine', record: { offerSeq: round + 1, leaseSeq: 0, advanceSeq: 0, lenderSeq: 0, sourceSeq: 0 }, final: false },
        { kind: 'offer', id: `off_${round + 1}`, record: { value: 'offered', context: { note: 'x'.repeat(500) } }, final: false },
      ],
    })
  }
  await store.close()
  return dataDir
}

async function refusesToStart(t: Test, dataDir: string, message: RegExp): Promise<void> {
  const before = dataDigests(dataDir)
  const run = await runServiceToExit({ ...files.env, DATA_DIR: dataDir })
  t.equal(run.signal, null, 'the process ended by itself')
  t.equal(run.code, 1, 'exit code 1')
  t.match(run.stderr, /^agent-credit: cannot start: /m, 'stderr says it cannot start')
  t.match(run.stderr, message)
  t.match(run.stderr, dataDir, 'the message names the data directory')
  t.notMatch(run.stdout, /listening/, 'it never listened')
  t.same(dataDigests(dataDir), before, 'every file of the data directory is untouched')
}

t.test('a data.mdb whose header is garbage', async (t) => {
  const dataDir = await populated()
  t.teardown(() => removeDir(dataDir))
  const file = path.join(dataDir, 'data.mdb')
  fs.writeFileSync(file, Buffer.alloc(fs.statSync(file).size, 0x5a))
  await refusesToStart(t, dataDir, /is damaged: .*Nothing was changed; restore it from a backup/)
})

t.test('a data.mdb whose data pages are garbage (valid header)', async (t) => {
  const dataDir = await populated()
  t.teardown(() => removeDir(dataDir))
  const file = path.join(dataDir, 'data.mdb')
  const bytes = fs.readFileSync(file)
  bytes.fill(0x5a, 2 * 4096)
  fs.writeFileSync(file, bytes)
  await refusesToStart(t, dataDir, /is damaged/)
})

t.test('after a crash, damage the deep check finds while the engine is restored beside it (a free page past the end of data.mdb)', async (t) => {
  const dataDir = await populated()
  t.teardown(() => removeDir(dataDir))
  // The engine's restore reads every live snapshot before the verdict; the free list it never reads.
  freePagePastTheEnd(dataDir)
  await refusesToStart(t, dataDir, /is damaged: the free-page list is damaged: .*Nothing was changed; restore it from a backup/)
})

t.test('offer snapshots of a future schema version (recorded in the schema meta record)', async (t) => {
  const dataDir = await populated({ offer: 3 })
  t.teardown(() => removeDir(dataDir))
  await refusesToStart(t, dataDir, /offer snapshots of schema version 3, written by a newer release; this release reads up to version 2/)
})

t.test('one live snapshot stamped with a future schema version', async (t) => {
  const dataDir = await populated()
  t.teardown(() => removeDir(dataDir))
  // Written beside the store's own writes (as a newer release would), without touching the schema record.
  const root = open({ path: dataDir, overlappingSync: false, maxDbs: 8 } as never)
  const snapshots = root.openDB({ name: 'snapshots', ...storedValueEncoding(root) } as never)
  const entry = snapshots.get(['offer', 'off_3']) as Record<string, unknown>
  t.equal(entry.version, 1, 'written as the release before histories wrote it')
  snapshots.putSync(['offer', 'off_3'], { ...entry, version: 7 })
  await root.close()
  await refusesToStart(t, dataDir, /offer off_3: snapshot schema version 7 is newer than this release reads \(2\)\. Run the newer release or use another DATA_DIR/)
})
