// The README's SDK example is run as written (the block between the sdk-example markers) against the devnet, with three
// fresh funded wallets: it must borrow, have the lender's loop pay the supplier, complete the job and see the advance
// repaid. A README edit that breaks the example, or an SDK change that breaks the README, fails here.
import { spawn } from 'node:child_process'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { AgentCredit, ChainAgent } from '../../src/client/index.ts'
import { fund, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Address, Hex } from 'viem'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

async function readmeExample(): Promise<string> {
  const readme = await readFile(path.join(root, 'README.md'), 'utf8')
  const block = /<!-- sdk-example:start -->\n```ts\n([\s\S]*?)```\n<!-- sdk-example:end -->/.exec(readme)
  if (block === null) throw new Error('README.md has no sdk-example block')
  return block[1] as string
}

t.test('the README SDK example runs the typical flow as written', async (t) => {
  const example = await readmeExample()
  t.ok(example.split('\n').length <= 30, 'it stays short enough to read')
  // Inside the checkout (ignored by git), so `agent-credit/client` resolves to this package by its own name.
  const dir = path.join(root, '.tap', 'readme-example')
  await mkdir(dir, { recursive: true })
  const file = path.join(dir, `sdk-example-${process.pid}.ts`)
  await writeFile(file, example)

  const [entry] = await new AgentCredit({ baseUrl: h.url, account: privateKeyToAccount(generatePrivateKey()) }).suppliers()
  const supplier = entry!.addresses[h.network.slug]![0] as Address
  const reader = new ChainAgent(h.network, privateKeyToAccount(generatePrivateKey()))
  const supplierBalance = () => reader.balanceOf(USDC, supplier)
  const supplierBefore = await supplierBalance()

  const keys: Record<string, Hex> = {}
  for (const [name, tokens] of [['LENDER_KEY', usdc(3000)], ['BORROWER_KEY', 0n], ['JOB_CLIENT_KEY', usdc(1000)]] as const) {
    const privateKey = generatePrivateKey()
    await fund(h.devnet, h.network, privateKeyToAccount(privateKey).address, tokens)
    keys[name] = privateKey
  }
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: root, env: { ...process.env, AGENT_CREDIT_URL: h.url, ...keys }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('exit', (code) => {
      clearTimeout(guard)
      resolve({ code, stdout, stderr })
    })
  })
  await rm(file, { force: true })
  t.equal(run.code, 0, run.stderr)
  const [decision, advanceId, settledAdvanceId, state] = run.stdout.trim().split(/\s+/)
  t.equal(decision, 'approved')
  t.match(advanceId, /^adv_/, 'the lender loop paid the supplier and the advance exists')
  t.equal(settledAdvanceId, advanceId, 'completing the job settled that advance')
  t.equal(state, 'repaid')
  t.equal(await supplierBalance() - supplierBefore, usdc(400), 'the supplier received the 400 USDC on chain')
})
