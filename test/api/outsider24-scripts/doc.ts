// outsider24: a plain-HTTP client built from the published documents only. Every answer is checked against the
// schema /openapi.json gives its operation and status (ajv 2020-12, the document's dialect); an undocumented status
// or an answer the schema refuses is printed as a FINDING. Devnet funding as llms.txt says: gas from the deployer,
// USDC from a demo account. Keys are llms.txt's "Devnet accounts (TEST ONLY)".
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { createPublicClient, createWalletClient, defineChain, http, parseAbi, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'

export const base = process.env.URL ?? 'http://127.0.0.1:8463'
export const findings: string[] = []
export function finding(s: string): void { findings.push(s); console.log('FINDING:', s) }

const doc = await (await fetch(`${base}/openapi.json`)).json() as any
export const catalog = await (await fetch(`${base}/.well-known/service.json`)).json() as any
const ajv = new (Ajv2020 as any).default({ strict: false, allErrors: true }) as any
;(addFormats as any).default(ajv)
ajv.addSchema({ $id: 'doc', components: doc.components })

function templateOf(method: string, path: string): [string, any] | undefined {
  const p = path.split('?')[0]!
  for (const [tpl, ops] of Object.entries<any>(doc.paths)) {
    const re = new RegExp('^' + tpl.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$')
    if (re.test(p) && ops[method.toLowerCase()]) return [tpl, ops[method.toLowerCase()]]
  }
  return undefined
}
function rewrite(s: any): any {
  if (Array.isArray(s)) return s.map(rewrite)
  if (s && typeof s === 'object') {
    const o: any = {}
    for (const [k, v] of Object.entries(s)) o[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? 'doc' + v : rewrite(v)
    return o
  }
  return s
}
const compiled = new Map<string, any>()

export type Answer = { status: number, body: any, headers: Headers }
export async function call(method: string, path: string, body?: unknown, token?: string, extra: Record<string, string> = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...extra }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  let parsed: any = text
  try { parsed = text ? JSON.parse(text) : undefined } catch {}
  const op = templateOf(method, path)
  if (!op) finding(`${method} ${path}: no operation in /openapi.json`)
  else {
    const [tpl, o] = op
    const r = o.responses?.[String(res.status)] ?? o.responses?.default
    if (!r) finding(`${method} ${tpl}: status ${res.status} not documented (${parsed?.code ?? ''})`)
    else {
      const media = r.content ? Object.keys(r.content)[0] : undefined
      const full = (res.headers.get('content-type') ?? '').replace(/\s+/g, ' ').trim()
      const served = full.split(';')[0]!.trim()
      if (media && r.content && !(served in r.content) && !(full in r.content)) finding(`${method} ${tpl} ${res.status}: served ${served || 'no content-type'}, documented ${Object.keys(r.content).join(', ')}`)
      const schema = media ? r.content[media].schema : undefined
      if (schema) {
        const key = `${method} ${tpl} ${res.status}`
        let v = compiled.get(key)
        if (!v) { v = ajv.compile(rewrite(schema)); compiled.set(key, v) }
        if (!v(parsed)) finding(`${key}: answer does not validate: ${JSON.stringify(v.errors.slice(0, 3))} body ${JSON.stringify(parsed).slice(0, 300)}`)
      }
    }
  }
  return { status: res.status, body: parsed, headers: res.headers }
}
export async function ok(method: string, path: string, body?: unknown, token?: string, want?: number): Promise<any> {
  const a = await call(method, path, body, token)
  if (a.status >= 400 || (want !== undefined && a.status !== want)) throw new Error(`${method} ${path} -> ${a.status} ${JSON.stringify(a.body)}`)
  return a.body
}

export async function signIn(account: PrivateKeyAccount): Promise<string> {
  const n = await ok('GET', '/auth/nonce')
  const message = createSiweMessage({ domain: n.domain, address: account.address, uri: base, version: '1', chainId: n.chainIds[0], nonce: n.nonce })
  const s = await ok('POST', '/auth/session', { message, signature: await account.signMessage({ message }) }, undefined, 201)
  return s.token
}

export const keys = {
  deployer: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  lender: '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  borrower: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  jobClient: '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
} as const
export const net = catalog.networks[0]
export const usdcAddr = net.assets[0].address as Hex
export const chain = defineChain({ id: net.chainId, name: net.slug, nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [net.rpcUrl] } } })
export const pub = createPublicClient({ chain, transport: http() })
export const erc20 = parseAbi(['function transfer(address,uint256) returns (bool)', 'function balanceOf(address) view returns (uint256)'])
export function wallet(account: PrivateKeyAccount) { return createWalletClient({ account, chain, transport: http() }) }
export async function fresh(usdc: bigint, from: Hex = keys.borrower): Promise<PrivateKeyAccount> {
  const a = privateKeyToAccount(generatePrivateKey())
  await fund(a.address, usdc, from)
  return a
}
export async function fund(to: Hex, usdc: bigint, from: Hex = keys.borrower): Promise<void> {
  const h1 = await wallet(privateKeyToAccount(keys.deployer)).sendTransaction({ to, value: parseEther('1') })
  await pub.waitForTransactionReceipt({ hash: h1 })
  if (usdc > 0n) {
    const h2 = await wallet(privateKeyToAccount(from)).writeContract({ address: usdcAddr, abi: erc20, functionName: 'transfer', args: [to, usdc] })
    await pub.waitForTransactionReceipt({ hash: h2 })
  }
}
// An unsigned transaction as the service serves it: {to, data, value, chainId, gas} (+ network, from).
export async function send(account: PrivateKeyAccount, tx: any): Promise<Hex> {
  const hash = await wallet(account).sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value ?? 0), gas: tx.gas === undefined ? undefined : BigInt(tx.gas) })
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success') throw new Error(`transaction ${hash} reverted`)
  return hash
}
export async function until<T>(what: string, f: () => Promise<T | undefined | null | false>, tries = 60): Promise<T> {
  for (let i = 0; i < tries; i++) { const v = await f(); if (v) return v; await new Promise((r) => setTimeout(r, 500)) }
  throw new Error(`timed out: ${what}`)
}
export function report(): void {
  console.log(`\n${findings.length} finding(s)`)
  for (const f of findings) console.log(' -', f)
}
export function validate(schemaName: string, value: unknown, what: string): void {
  const key = `schema ${schemaName}`
  let v = compiled.get(key)
  if (!v) { v = ajv.compile({ $ref: `doc#/components/schemas/${schemaName}` }); compiled.set(key, v) }
  if (!v(value)) finding(`${what} does not validate against ${schemaName}: ${JSON.stringify(v.errors.slice(0, 3))} value ${JSON.stringify(value).slice(0, 300)}`)
}
/** The client funds a job for the borrower with the served approve + fundJob: the jobId and the fundJob's hash. */
export async function fundJob(borrower: PrivateKeyAccount, client: PrivateKeyAccount, receivableAtomic: bigint): Promise<{ jobId: string; fundingTxHash: string }> {
  const jobId = `job_${crypto.randomUUID()}`
  const ft = await ok('GET', `/credit/jobs/${jobId}/funding-transactions?network=${net.slug}&asset=USDC&receivableAtomic=${receivableAtomic}&agent=${borrower.address}&client=${client.address}`)
  let fundingTxHash = ''
  for (const tx of ft.transactions) fundingTxHash = await send(client, tx)
  return { jobId, fundingTxHash }
}
