import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Store, type StoreOptions } from '../../src/store/index.ts'

export function tempDir(prefix = 'store-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix))
}

/** A store in a fresh directory; removed when the test ends. */
export async function freshStore(
  t: { teardown: (fn: () => unknown) => void },
  options: Partial<StoreOptions> = {},
): Promise<{ store: Store; dataDir: string }> {
  const dataDir = path.join(tempDir(), 'data')
  const store = await Store.open({ dataDir, ...options })
  t.teardown(async () => {
    await store.close()
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true })
  })
  return { store, dataDir }
}

export function fileDigest(file: string): string {
  const bytes = fs.readFileSync(file)
  let h = 0
  for (const b of bytes) h = (h * 31 + b) >>> 0
  return `${bytes.length}:${h}`
}
