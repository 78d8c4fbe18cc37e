// A new agent developer followed only the published documents through the typical flow, as lender and borrower
// with fresh wallets, and found statements the service does not keep: the catalog said the session wallet's setup
// approves without limit (it approves the registered liquidity, which paySupplier spends and a repayment does not
// restore, so the lender reads availableAtomic 0 until it sends the approve its actions list); llms.txt said every
// POST takes an Idempotency-Key (sign-in, /credit-score, /operator/reconcile and the facilitator take none); and
// llms.txt never said how a fresh wallet gets gas and tokens on the devnet. Each check holds a document to the service.
import t from 'tap'
import { decodeFunctionData, erc20Abi } from 'viem'
import { CreditClient } from '../../src/client/client.ts'
import { readyLender, startHarness, usdc } from '../fixtures/service.ts'
import type { Json } from './fixtures/api.ts'

const h = await startHarness()
t.teardown(() => h.stop())
const anyone = new CreditClient(h.url)

t.test('the catalog says the session wallet\'s setup approves the registered liquidity, as its setup transaction does', async (t) => {
  const approvals: string = (await anyone.get('/.well-known/service.json')).body.contracts.approvals
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(1000) })
  const [setup] = lender.registration.setupTransactions as Json[]
  const approve = decodeFunctionData({ abi: erc20Abi, data: setup!['data'] })
  t.equal(approve.functionName, 'approve')
  t.equal(approve.args[1], usdc(1000), 'the setup approves the registered liquidity')
  t.match(approvals, /session wallet approves its registered liquidity in its setup/)
  t.notMatch(approvals, /without limit, in its setup/)
})

t.test('llms.txt names every POST the OpenAPI document gives no Idempotency-Key, and says how to fund a fresh devnet wallet', async (t) => {
  const llms: string = (await anyone.get('/llms.txt')).body
  const document = (await anyone.get('/openapi.json')).body
  const unkeyed = Object.entries(document.paths as Record<string, Record<string, Json>>)
    .filter(([, operations]) => operations['post'] !== undefined)
    .filter(([, operations]) => !((operations['post']!['parameters'] ?? []) as Json[]).some((p) => String(p['$ref'] ?? p['name']).includes('IdempotencyKey')))
    .map(([path]) => path)
  t.ok(unkeyed.includes('/auth/session') && unkeyed.includes('/credit-score'), `unkeyed POSTs: ${unkeyed.join(', ')}`)
  const takeNone = /take an Idempotency-Key[\s\S]*?take none/.exec(llms.replace('accept an Idempotency-Key', 'take an Idempotency-Key'))?.[0] ?? ''
  for (const path of unkeyed) {
    const named = path.startsWith('/x402/') ? takeNone.includes('x402') : takeNone.includes(path)
    t.ok(named, `llms.txt says ${path} takes no Idempotency-Key`)
  }
  t.match(llms, /A fresh wallet starts empty: send it gas \(ETH\) from the deployer and USDC/)
})
