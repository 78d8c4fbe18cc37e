// An MCP action retried with the key its first answer named acts once (outsider20's finding: every tool call made a
// fresh Idempotency-Key, so a model that called withdraw_liquidity again after a client timeout withdrew twice). A
// lender registered with the service and never funded withdraws 1 unit through its MCP server: twice with one key
// lowers its liquidity once and the second answer is the first's; twice without a key, as documented, twice; a bad
// key is a tool error and sends nothing. request_and_match's error names the approved offer its failed match left.
import t, { type Test } from 'tap'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedIn, startHarness, USDC, type Harness } from '../fixtures/service.ts'
import { TS_LOADER_ARGS } from '../fixtures/ts-loader.ts'
import { CreditApiError, OfferNotMatchedError } from '../../src/client/sdk.ts'
import { toolError } from '../../src/mcp/server.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

let h: Harness
t.before(async () => {
  h = await startHarness()
})
t.teardown(async () => {
  await h?.stop()
})

/** The MCP server of `walletKey`, with a session key directory of its own. */
async function mcpServer(t: Test, walletKey: `0x${string}`): Promise<{ client: Client; keyDir: string }> {
  const keyDir = await mkdtemp(join(tmpdir(), 'mcp-idempotency-'))
  t.teardown(() => rm(keyDir, { recursive: true, force: true }))
  const env = { PATH: process.env['PATH'] ?? '', AGENT_CREDIT_URL: h.url, AGENT_CREDIT_WALLET_KEY: walletKey, AGENT_CREDIT_SESSION_KEY_DIR: keyDir }
  const transport = new StdioClientTransport({ command: process.execPath, args: [...TS_LOADER_ARGS, 'src/mcp/main.ts'], cwd: root, env, stderr: 'inherit' })
  const client = new Client({ name: 'mcp-idempotency-test', version: '0.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, keyDir }
}

t.test('withdraw_liquidity with the same idempotencyKey withdraws once; without one, every call withdraws', async (t) => {
  const walletKey = generatePrivateKey()
  const lender = privateKeyToAccount(walletKey)
  const registration = await (await signedIn(h.url, lender)).post('/lenders/register', {
    availableLiquidityAtomic: '1000', asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'],
  })
  t.equal(registration.status, 201, 'registered, never funded')
  const available = async (): Promise<string> => {
    const wallet = await (await fetch(`${h.url}/lenders/${lender.address}/wallet`)).json() as { activity: { policyAvailableAtomic: string } }
    return wallet.activity.policyAvailableAtomic
  }
  t.equal(await available(), '1000')

  const { client } = await mcpServer(t, walletKey)

  const { tools } = await client.listTools()
  const withdrawTool = tools.find((tool) => tool.name === 'withdraw_liquidity')!
  t.ok((withdrawTool.inputSchema.properties as Record<string, unknown>)['idempotencyKey'], 'an action takes idempotencyKey')
  t.match(withdrawTool.description, /idempotencyKey/, 'and says to pass it again on a retry')
  t.notOk((tools.find((tool) => tool.name === 'lender_actions')!.inputSchema.properties as Record<string, unknown>)['idempotencyKey'], 'a signed-in read takes none')

  const withdraw = (args: Record<string, unknown>): Promise<any> => client.callTool({ name: 'withdraw_liquidity', arguments: { amountAtomic: '1', ...args } })

  // No key: the server makes one and names it; the same call again is a second withdrawal.
  const first: any = await withdraw({})
  t.notOk(first.isError, 'withdrew')
  const made = first.structuredContent.idempotencyKey
  t.match(made, /^[\x21-\x7e]{1,255}$/, 'the answer names the key the server made')
  t.match(first.content[1]?.text, made, 'in the text too')
  t.equal(await available(), '999')
  const second: any = await withdraw({})
  t.not(second.structuredContent.idempotencyKey, made, 'a call without a key gets a new one')
  t.equal(await available(), '998', 'two calls without a key are two withdrawals')

  // The retry of the first call with the key it named: answered the first's result, nothing withdrawn again.
  const retried: any = await withdraw({ idempotencyKey: made })
  t.same(retried.structuredContent, first.structuredContent, 'the retry answers the first call\'s result and key')
  t.equal(await available(), '998', 'the retry withdrew nothing')

  // A key of the model's own, twice: once.
  const own = 'model-chosen-key-1'
  const once: any = await withdraw({ idempotencyKey: own })
  const again: any = await withdraw({ idempotencyKey: own })
  t.equal(once.structuredContent.idempotencyKey, own, 'the given key is the one used')
  t.same(again.structuredContent.result, once.structuredContent.result, 'the second answer is the first\'s')
  t.equal(await available(), '997', 'the same key withdrew once')

  // A bad key: a tool error, nothing sent.
  for (const bad of ['has space', '', 'x'.repeat(256), 7]) {
    const refused: any = await withdraw({ idempotencyKey: bad })
    t.equal(refused.isError, true, `${JSON.stringify(bad).slice(0, 20)} is refused`)
    t.equal(refused.structuredContent.error.code, 'invalid_idempotency_key')
    // The shape every tool error has (toolError): the problem as text and as structuredContent.error, nothing else.
    const problem = { code: 'invalid_idempotency_key', detail: 'idempotencyKey must be 1 to 255 visible ASCII characters; nothing was sent' }
    t.same(refused, { isError: true, content: [{ type: 'text', text: JSON.stringify(problem, null, 2) }], structuredContent: { error: problem } }, 'as toolError builds it')
  }
  t.equal(await available(), '997', 'a refused key withdrew nothing')
})

t.test('register_lender retried with its key answers the same session key and file, not a new key', async (t) => {
  const { client, keyDir } = await mcpServer(t, generatePrivateKey())
  const policy = { availableLiquidityAtomic: '1000', asset: USDC, networks: [h.network.slug], minFeeBps: 100, maxDurationSeconds: 30 * 24 * 3600, acceptedRiskBands: ['A', 'B', 'C'] }
  const first: any = await client.callTool({ name: 'register_lender', arguments: policy })
  t.notOk(first.isError, 'registered')
  const { idempotencyKey } = first.structuredContent
  const retried: any = await client.callTool({ name: 'register_lender', arguments: { ...policy, idempotencyKey } })
  t.notOk(retried.isError, 'the retry is answered')
  t.equal(retried.structuredContent.result.sessionKey.address, first.structuredContent.result.sessionKey.address, 'the same session key: the replay was not turned into a new key')
  t.equal(retried.structuredContent.result.sessionKey.keyFile, first.structuredContent.result.sessionKey.keyFile, 'whose file the first call wrote')
  t.equal((await readdir(keyDir)).length, 1, 'one key file')
})

t.test('request_and_match\'s tool error names the approved offer to match_offer, and the key', async (t) => {
  const decision = { decision: 'approved', offer: { offerId: 'off_standing' } } as unknown as OfferNotMatchedError['decision']
  const refused = new CreditApiError('POST', '/credit/match', 409, { code: 'offer_credit_ending', detail: 'no whole lease fits' })
  const reply: any = toolError('request_and_match', new OfferNotMatchedError(decision, 'off_standing', refused), 'key-1')
  t.equal(reply.isError, true)
  t.match(reply.structuredContent.error, { status: 409, code: 'offer_credit_ending', offerId: 'off_standing', idempotencyKey: 'key-1', note: /match_offer/ }, 'the match\'s code, the offer, what to do and the key')
  t.same(JSON.parse(reply.content[0].text), reply.structuredContent.error, 'in the text too')
})
