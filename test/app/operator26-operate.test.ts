// Running the service as an operator does, from the README alone (operator26): a bare anvil as "the real chain", the
// contracts deployed with src/tools/deploy.ts (its networks file on stdout), `npm start` on that file with the keys in
// the documented variables, then:
// - SIGTERM to the `npm start` process (what a supervisor signals) stops the service cleanly. Before, npm's `sh -c`
//   died and left the service running, orphaned, still holding the port (package.json's start now `exec`s tsx, which
//   relays the signal).
// - REQUEST_LOG=0 drops the per-request lines only: before, it silenced the whole log (`listening`, every alert).
// - A key that is not the credit contract's `leaseSigner()` or `operator()` stops the start naming the field. Before,
//   the service started healthy and every lease it signed would revert `WrongLeaseSigner` on the lender's gas.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { startAnvil } from '../../src/chain/anvil.ts'
import { demoAccounts } from '../../src/chain/devnet.ts'
import { parseDeployArgs } from '../../src/tools/deploy.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'
import { REPO, runServiceToExit } from '../persistence/fixtures/child-service.ts'

/** Guards against a child that hangs (a start under load took over 30 s), not speed expectations. */
const HANG_GUARD_MS = 150_000

const dir = mkdtempSync(join(tmpdir(), 'operator26-'))
const anvil = await startAnvil({ chainId: 31_999, blockTimeSeconds: 1 })
const children = new Set<ChildProcess>()
t.teardown(async () => {
  // npm start runs in a process group of its own (detached): end the whole group, whatever the test saw.
  for (const child of children) if (child.pid !== undefined) try { process.kill(-child.pid, 'SIGKILL') } catch { /* gone */ }
  await anvil.stop()
  rmSync(dir, { recursive: true, force: true })
})

const operatorKey = generatePrivateKey()
const leaseSignerKey = generatePrivateKey()
const keys = { OPERATOR_PRIVATE_KEY: operatorKey, LEASE_SIGNER_PRIVATE_KEY: leaseSignerKey }

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...TS_LOADER_ARGS, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
  const guard = setTimeout(() => child.kill('SIGKILL'), HANG_GUARD_MS)
  return new Promise((resolve) => child.on('close', (code) => (clearTimeout(guard), resolve({ code, stdout, stderr }))))
}

const deployed = await run(
  [
    'src/tools/deploy.ts',
    '--rpc-url', anvil.rpcUrl, '--slug', 'realchain',
    '--operator', privateKeyToAccount(operatorKey).address, '--lease-signer', privateKeyToAccount(leaseSignerKey).address,
    '--test-token', '--test-registries', '--test-multicall3', '--confirmations', '1',
  ],
  // anvil's first dev account pays the deployment, as a funded deployer key would on a real chain.
  { DEPLOYER_PRIVATE_KEY: demoAccounts().deployer.privateKey },
)
const networksFile = join(dir, 'networks.json')
writeFileSync(networksFile, deployed.stdout)

t.test('the deploy script deploys the contracts and prints a networks file the service starts on', async (t) => {
  t.equal(deployed.code, 0, `deploy exits 0; stderr: ${deployed.stderr.slice(0, 1500)}`)
  const file = JSON.parse(deployed.stdout) as { networks: Array<Record<string, unknown>> }
  const entry = file.networks[0] as Record<string, unknown>
  t.equal(entry['chainId'], 31_999)
  t.equal(entry['caip2'], 'eip155:31999')
  t.equal(entry['leaseSignerKeyEnv'], 'LEASE_SIGNER_PRIVATE_KEY')
  t.equal(entry['operatorKeyEnv'], 'OPERATOR_PRIVATE_KEY')
  t.ok(typeof entry['deploymentBlock'] === 'number' && entry['deploymentBlock'] > 0, 'the credit contract\'s deployment block')
})

t.test('the deploy script refuses what the contract would', async (t) => {
  const operator = privateKeyToAccount(operatorKey).address
  const base = ['--rpc-url', 'http://127.0.0.1:1', '--slug', 's', '--test-token', '--test-registries']
  t.throws(() => parseDeployArgs([...base, '--operator', operator, '--lease-signer', operator]), { name: 'DeployUsageError' }, 'one key in both roles')
  t.throws(() => parseDeployArgs([...base, '--operator', operator]), { name: 'DeployUsageError' }, 'no lease signer')
  t.throws(() => parseDeployArgs(['--rpc-url', 'http://127.0.0.1:1', '--slug', 's', '--operator', operator, '--lease-signer', privateKeyToAccount(leaseSignerKey).address, '--test-registries']), { name: 'DeployUsageError' }, 'no token')
  const unreachable = await run(['src/tools/deploy.ts', ...base, '--operator', operator, '--lease-signer', privateKeyToAccount(leaseSignerKey).address], {})
  t.equal(unreachable.code, 2, 'no DEPLOYER_PRIVATE_KEY: exit 2')
  t.match(unreachable.stderr, /DEPLOYER_PRIVATE_KEY/)
})

t.test('SIGTERM to `npm start` stops the service cleanly, and REQUEST_LOG=0 keeps every line but the requests', async (t) => {
  const dataDir = join(dir, 'data')
  const child = spawn('npm', ['start'], {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...keys, NETWORKS_FILE: networksFile, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', REQUEST_LOG: '0' },
  })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
  // 'exit', not 'close': an orphaned service would hold npm's stdout open for ever.
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`no start within ${HANG_GUARD_MS} ms: ${stderr.slice(0, 1500)}`)), HANG_GUARD_MS)
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
      const match = /agent-credit listening on (\S+)/.exec(stdout)
      if (match) (clearTimeout(guard), resolve(match[1] as string))
    })
    void exited.then((code) => (clearTimeout(guard), reject(new Error(`exited ${code} before listening: ${stderr.slice(0, 1500)}`))))
  })
  const health = await fetch(`${url}/health`)
  t.equal(health.status, 200, '/health answers')
  const port = Number(new URL(url).port)
  child.kill('SIGTERM')
  t.equal(await exited, 0, '`npm start` exits 0')
  const lines = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; level: string })
  t.ok(lines.some((l) => l.msg === 'listening'), 'the `listening` line is logged with REQUEST_LOG=0')
  t.notOk(lines.some((l) => l.msg === 'request'), 'no request line')
  // The service's own stop ends with `closed`; by the time npm is gone, the service must be too: nothing listens.
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  t.ok(stdout.includes('"msg":"closed"'), `the service logged its clean stop; stdout tail: ${stdout.slice(-600)}`)
  const refused = await new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), resolve(false)))
    socket.once('error', () => resolve(true))
  })
  t.ok(refused, 'the port is free: no orphaned service')
})

t.test('a key that is not the contract\'s leaseSigner() or operator() stops the start, naming the field', async (t) => {
  const other = generatePrivateKey()
  const dataDir = join(dir, 'refused')
  const lease = await runServiceToExit({ ...keys, LEASE_SIGNER_PRIVATE_KEY: other, NETWORKS_FILE: networksFile, DATA_DIR: dataDir })
  t.equal(lease.code, 1, 'exit 1')
  t.match(lease.stderr, /cannot start: .*\n.*\/networks\/0\/leaseSignerKeyEnv: realchain: the key in LEASE_SIGNER_PRIVATE_KEY is .* leaseSigner\(\)/)
  const operator = await runServiceToExit({ ...keys, OPERATOR_PRIVATE_KEY: other, NETWORKS_FILE: networksFile, DATA_DIR: dataDir })
  t.equal(operator.code, 1, 'exit 1')
  t.match(operator.stderr, /\/networks\/0\/operatorKeyEnv: realchain: the key in OPERATOR_PRIVATE_KEY is .* operator\(\)/)
})

t.test('a token the chain does not confirm (decimals, EIP-712 domain, address) stops the start, naming the field', async (t) => {
  const dataDir = join(dir, 'refused-token')
  const variants: Array<[string, (token: Record<string, unknown>) => void, RegExp]> = [
    ['decimals', (token) => (token['decimals'] = 18), /\/networks\/0\/tokens\/0\/decimals: realchain: USDC at .* has 6 decimals, configured 18/],
    ['eip712Name', (token) => (token['eip712Name'] = 'USDC'), /\/networks\/0\/tokens\/0\/eip712Name: realchain: USDC's DOMAIN_SEPARATOR\(\) is not the one of eip712Name "USDC"/],
    ['address', (token) => (token['address'] = '0x000000000000000000000000000000000000dEaD'), /\/networks\/0\/tokens\/0\/address: realchain: no contract at USDC's address/],
  ]
  for (const [name, change, expected] of variants) {
    const file = JSON.parse(deployed.stdout) as { networks: Array<{ tokens: Array<Record<string, unknown>> }> }
    change(file.networks[0]?.tokens[0] as Record<string, unknown>)
    const path = join(dir, `networks-${name}.json`)
    writeFileSync(path, JSON.stringify(file))
    const run = await runServiceToExit({ ...keys, NETWORKS_FILE: path, DATA_DIR: dataDir })
    t.equal(run.code, 1, `${name}: exit 1`)
    t.match(run.stderr, expected, `${name}: named`)
  }
})
