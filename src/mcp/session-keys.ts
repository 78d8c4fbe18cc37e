// Where the MCP server keeps a lender's session key. The service shows the key once (POST /lenders/register) and it
// moves the lender's money, while everything a tool answers enters the model's context, which is logged, shared and
// replayed: so the key goes to a file only the user can read and the model is told the file's path, never the key.
// The directory is checked before the registration is sent, so a key the service hands out always has a place to go.
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { getAddress, isAddress, isHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/** The default directory: under the user's home, so it is the user's own. */
export const DEFAULT_SESSION_KEY_DIR = join(homedir(), '.agent-credit', 'session-keys')

export class SessionKeyStore {
  readonly directory: string

  constructor(directory: string) {
    this.directory = directory
  }

  /**
   * Creates the directory (mode 0700) if it is missing and refuses one another user owns or others may enter: a key
   * file there could be read, or replaced, by someone else.
   */
  async prepare(): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 })
    const info = await stat(this.directory)
    if (!info.isDirectory()) throw new Error(`${this.directory} is not a directory`)
    if (process.getuid !== undefined && info.uid !== process.getuid()) throw new Error(`${this.directory} belongs to another user: the session key is not written there`)
    if ((info.mode & 0o077) !== 0) throw new Error(`${this.directory} is open to other users (mode ${(info.mode & 0o777).toString(8)}): chmod 700 it, the session key is not written there`)
  }

  /**
   * The file this store already keeps the key of session address `address` in, if any: a register_lender retried with
   * its first call's idempotencyKey is answered the registration again without the key, which the first call wrote.
   */
  async saved(address: string): Promise<string | undefined> {
    if (!isAddress(address, { strict: false })) return undefined
    const path = join(this.directory, `${getAddress(address)}.json`)
    try {
      const record = JSON.parse(await readFile(path, 'utf8')) as { address?: unknown; privateKey?: unknown }
      return typeof record.privateKey === 'string' && isHex(record.privateKey) && record.privateKey.length === 66 && privateKeyToAccount(record.privateKey).address === getAddress(address) ? path : undefined
    } catch {
      return undefined
    }
  }

  /**
   * Writes the key (mode 0600, never over an existing file) and answers the file's path. The file is named by the
   * address the key itself derives, never by the text the service answered beside it: a hostile or broken service
   * could name a path outside the directory ("../x") or another wallet's file. A key that is not one is refused.
   */
  async save(sessionKey: { address: string; privateKey: string }, lender: string): Promise<string> {
    if (!isHex(sessionKey.privateKey) || sessionKey.privateKey.length !== 66) throw new Error('the service answered a session key that is not a private key')
    const address = privateKeyToAccount(sessionKey.privateKey).address
    if (address.toLowerCase() !== sessionKey.address.toLowerCase()) throw new Error(`the service answered session key address ${JSON.stringify(sessionKey.address)}, but the key is ${address}'s`)
    const path = join(this.directory, `${address}.json`)
    const record = { address, privateKey: sessionKey.privateKey, lender, savedAt: new Date().toISOString() }
    await writeFile(path, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
    return path
  }
}
