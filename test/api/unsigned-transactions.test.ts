// Every on-chain step of a job's client and of a borrower is served as unsigned transactions, and the catalog is the
// one place the ABIs and the id-to-bytes32 rule are stated (issue 14). The catalog's credit ABI is the compiled one;
// a client that knows only the catalog funds a job the service then accepts; the funding, collateral and repay steps
// come from their routes and move exactly the amounts; llms.txt and the OpenAPI document restate no call signature.
import t from 'tap'
import { createWalletClient, decodeFunctionData, encodePacked, http, keccak256, stringToBytes, type Abi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { loadArtifact } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { AgentCredit, ChainAgent, CreditApiError, type ChainStepsView } from '../../src/client/index.ts'
import { CreditClient } from '../../src/client/client.ts'
import { creditRequest, fundedAccount, readyLender, startHarness, usdc, USDC, type Harness } from '../fixtures/service.ts'
import { expectDocumented, type Json } from './fixtures/api.ts'

let h: Harness
let doc: Json
let catalog: Json
t.before(async () => {
  h = await startHarness()
  const client = new CreditClient(h.url)
  doc = (await client.get('/openapi.json')).body
  catalog = (await client.get('/.well-known/service.json')).body
})
t.teardown(async () => {
  await h?.stop()
})

const dueAt = () => new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString()

t.test("the catalog publishes the compiled credit contract's ABI and an ERC-20 ABI the token implements", async (t) => {
  const contracts = catalog['contracts'] as Json
  t.same(contracts['creditFacility']['abi'], loadArtifact('CreditFacilityV2').abi, 'exactly the compiled ABI')
  const names = (abi: Json[], type: string) => abi.filter((i) => i['type'] === type).map((i) => i['name'])
  for (const fn of ['fundJob', 'postCollateral', 'repay', 'paySupplier']) t.ok(names(contracts['creditFacility']['abi'], 'function').includes(fn), `function ${fn}`)
  for (const ev of ['JobFunded', 'SupplierPaid', 'Repaid']) t.ok(names(contracts['creditFacility']['abi'], 'event').includes(ev), `event ${ev}`)
  const token = loadArtifact('TestStablecoin').abi as unknown as Json[]
  const signature = (i: Json) => `${i['type']} ${i['name']}(${(i['inputs'] ?? []).map((p: Json) => `${p['type']}${p['indexed'] ? ' indexed' : ''}`).join(',')})`
  const compiled = new Set(token.map(signature))
  for (const item of contracts['token']['abi'] as Json[]) t.ok(compiled.has(signature(item)), `the devnet token has ${signature(item)}`)
  t.ok(names(contracts['token']['abi'], 'function').includes('approve') && names(contracts['token']['abi'], 'event').includes('Transfer'), 'functions and events')
})

/** The catalog's rule as a client applies it with viem alone: keccak256(abi.encodePacked(uint256 chainId, address creditContract, bytes jobId)). */
const ruleKey = (network: Json, jobId: string): Hex =>
  keccak256(encodePacked(['uint256', 'address', 'string'], [BigInt(network['chainId']), network['creditContract'], jobId]))

t.test('the jobId-to-key rule of the catalog names the job the contract and the service use', async (t) => {
  const keys = catalog['contracts']['keys'] as Json
  t.match(keys['jobKey'], /keccak256\(abi\.encodePacked\(uint256 chainId, address creditContract, bytes jobId\)\)/)
  const networks = catalog['networks'] as Json[]
  const example = keys['jobKeyExample'] as Json
  const exampleNetwork = networks.find((n) => n['slug'] === example['network'])!
  t.equal(example['chainId'], exampleNetwork['chainId'])
  t.equal(example['creditContract'], exampleNetwork['creditContract'])
  t.equal(example['jobKey'], ruleKey(exampleNetwork, example['jobId']), 'the example is the rule applied')
  t.equal(example['legacyJobKey'], keccak256(stringToBytes(example['jobId'])), 'the legacy key beside it, for comparison')
  // The SDK and the funding route produce the rule's key, on each network its own.
  const keyOfRoute = async (slug: string, jobId: string) => {
    const reply = await new CreditClient(h.url).get(`/credit/jobs/${jobId}/funding-transactions?network=${slug}&asset=${USDC}&receivableAtomic=1&agent=${h.network.creditContract}&client=${h.network.creditContract}`)
    const fund = decodeFunctionData({ abi: catalog['contracts']['creditFacility']['abi'] as Abi, data: reply.body.transactions[1].data as Hex })
    t.equal(reply.body.key, (fund.args as readonly unknown[])[0], 'the route\'s key is the one its fundJob carries')
    return reply.body.key as Hex
  }
  for (const entry of networks) {
    const sdk = ChainAgent.fromCatalog(entry as never, privateKeyToAccount(generatePrivateKey()), h.network.rpcUrl)
    t.equal(sdk.jobKey('job_rule_check'), ruleKey(entry, 'job_rule_check'), `the SDK's key on ${entry['slug']} is the rule's`)
    t.equal(await keyOfRoute(entry['slug'], 'job_rule_check'), ruleKey(entry, 'job_rule_check'), `the route's key on ${entry['slug']} is the rule's`)
  }
  t.ok(networks.length > 1 && new Set(networks.map((n) => ruleKey(n, 'job_rule_check'))).size === networks.length, 'each network has a key of its own')
  // A client with nothing but the catalog: its ABIs and its rule, viem's writeContract, no code of this repository.
  const network = networks.find((n) => n['slug'] === h.network.slug)!
  const abi = catalog['contracts']['creditFacility']['abi'] as Abi
  const tokenAbi = catalog['contracts']['token']['abi'] as Abi
  const token = (network['assets'] as Json[]).find((a) => a['symbol'] === USDC)!['address'] as Address
  const client = await fundedAccount(h.devnet, h.network, usdc(300))
  const borrower = await fundedAccount(h.devnet, h.network, 0n)
  const wallet = createWalletClient({ account: client, chain: networkChain(h.network), transport: http(h.network.rpcUrl) })
  const jobId = 'job_catalog_rule'
  const key = ruleKey(network, jobId)
  const agent = new ChainAgent(h.network, client)
  const wait = (hash: Hex) => agent.publicClient.waitForTransactionReceipt({ hash })
  await wait(await wallet.writeContract({ address: token, abi: tokenAbi, functionName: 'approve', args: [network['creditContract'], usdc(300)] }))
  const funding = await wallet.writeContract({ address: network['creditContract'], abi, functionName: 'fundJob', args: [key, token, usdc(300), borrower.address] })
  await wait(funding)
  const onChain = (await agent.publicClient.readContract({ address: network['creditContract'], abi, functionName: 'getJob', args: [key] })) as Json
  t.equal(onChain['borrower'], borrower.address, 'the contract holds the job under the rule\'s key')
  const job = await new AgentCredit({ baseUrl: h.url, account: borrower }).createJob({
    jobId, network: h.network.slug, asset: USDC, agent: borrower.address, receivableAtomic: usdc(300).toString(), dueAt: dueAt(), fundingTxHash: funding,
  })
  t.equal(job.receivableAtomic, usdc(300).toString(), 'and the service accepts the funding as that job\'s')
})

t.test('funding, collateral and repayment come from their routes as unsigned transactions of exactly the amounts', async (t) => {
  const clientAccount = await fundedAccount(h.devnet, h.network, usdc(1000))
  const borrowerAccount = await fundedAccount(h.devnet, h.network, usdc(500))
  const borrower = new AgentCredit({ baseUrl: h.url, account: borrowerAccount })
  const clientChain = new ChainAgent(h.network, clientAccount)
  const borrowerChain = new ChainAgent(h.network, borrowerAccount)
  const api = new CreditClient(h.url)
  const abi = catalog['contracts']['creditFacility']['abi'] as Abi
  const decode = (steps: ChainStepsView) => steps.transactions.map((tx) => tx.to === h.network.creditContract
    ? decodeFunctionData({ abi, data: tx.data as Hex })
    : decodeFunctionData({ abi: catalog['contracts']['token']['abi'] as Abi, data: tx.data as Hex }))

  const jobId = 'job_unsigned_1'
  const fundingQuery = { network: h.network.slug, asset: USDC, receivableAtomic: usdc(1000).toString(), agent: borrowerAccount.address, client: clientAccount.address }
  const fundingReply = await api.get(`/credit/jobs/${jobId}/funding-transactions?${new URLSearchParams(fundingQuery)}`)
  t.equal(fundingReply.status, 200)
  expectDocumented(t, doc, 'get', '/credit/jobs/{jobId}/funding-transactions', fundingReply)
  const funding = fundingReply.body as ChainStepsView
  t.equal(funding.key, ruleKey({ chainId: h.network.chainId, creditContract: h.network.creditContract }, jobId), 'the job\'s key on its network')
  t.same(funding.transactions.map((tx) => [tx.from, tx.chainId, tx.value]), [[clientAccount.address, h.network.chainId, '0'], [clientAccount.address, h.network.chainId, '0']])
  t.same(decode(funding).map((c) => [c.functionName, ...(c.args ?? [])]), [
    ['approve', h.network.creditContract, usdc(1000)],
    ['fundJob', funding.key, h.network.tokens[0]!.address, usdc(1000), borrowerAccount.address],
  ])

  // The SDK's fundJob takes the same route and sends both with the client's key.
  const job = await borrower.fundJob(clientChain, { jobId, network: h.network.slug, asset: USDC, agent: borrowerAccount.address, receivableAtomic: usdc(1000).toString(), dueAt: dueAt() })
  t.equal(job.state, 'funded')
  const unknown = await api.get(`/credit/jobs/job_other/funding-transactions?${new URLSearchParams({ ...fundingQuery, network: 'no-such-net' })}`)
  t.same([unknown.status, unknown.body.code], [400, 'unknown_network'], 'an unknown network is refused with its code')
  const noAsset = await api.get(`/credit/jobs/job_other/funding-transactions?${new URLSearchParams({ ...fundingQuery, asset: 'NOPE' })}`)
  t.same([noAsset.status, noAsset.body.code], [400, 'unknown_asset'])
  const again = await api.get(`/credit/jobs/${jobId}/funding-transactions?${new URLSearchParams(fundingQuery)}`)
  t.equal(again.status, 409)
  t.equal(again.body.code, 'job_exists')

  const collateralReply = await api.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${usdc(100)}`)
  expectDocumented(t, doc, 'get', '/credit/jobs/{jobId}/collateral-transactions', collateralReply)
  t.same(decode(collateralReply.body).map((c) => [c.functionName, ...(c.args ?? [])]), [
    ['approve', h.network.creditContract, usdc(100)],
    ['postCollateral', funding.key, h.network.tokens[0]!.address, usdc(100)],
  ])
  t.ok((collateralReply.body as ChainStepsView).transactions.every((tx) => tx.from === borrowerAccount.address), "sent from the job's borrower")
  const position = await borrower.postCollateralOnChain(borrowerChain, jobId, usdc(100))
  t.equal(position.amountAtomic, usdc(100).toString())
  t.equal((await borrower.job(jobId)).collateralAtomic, usdc(100).toString())
  t.equal((await api.get(`/credit/jobs/job_nobody/collateral-transactions?amountAtomic=1`)).body.code, 'job_not_found')
  t.equal((await api.get(`/credit/jobs/${jobId}/collateral-transactions?amountAtomic=0`)).status, 400, 'a zero amount is refused')

  // An advance from a lender, then its repayment from the route.
  const lender = await readyLender(h, { minFeeBps: 100, liquidityAtomic: usdc(500) })
  const decision = (await borrower.requestCredit(creditRequest(h, borrowerAccount.address, jobId, usdc(200), usdc(20)) as never))
  const match = await borrower.match(decision.offer!.offerId)
  t.equal(match.lease?.lender, lender.account.address)
  const actions = await new AgentCredit({ baseUrl: h.url, account: lender.account }).actions()
  const pay = actions.find((a) => a.kind === 'pay_supplier')!
  const paid = await new ChainAgent(h.network, lender.session).sendUnsigned(pay.transaction)
  const advance = await new AgentCredit({ baseUrl: h.url, account: lender.account }).reportSupplierPayment(decision.offer!.offerId, paid)
  const owed = BigInt(advance.lenderOwedAtomic) + BigInt(advance.reserveOwedAtomic)

  const repayReply = await api.get(`/credit/advances/${advance.advanceId}/repay-transactions`)
  expectDocumented(t, doc, 'get', '/credit/advances/{advanceId}/repay-transactions', repayReply)
  const repay = repayReply.body as ChainStepsView
  t.equal(repay.amountAtomic, owed.toString(), 'what is owed now, by default')
  t.same(decode(repay).map((c) => [c.functionName, ...(c.args ?? [])]), [['approve', h.network.creditContract, owed], ['repay', advance.advanceKey, owed]])
  t.ok(repay.transactions.every((tx) => tx.from === borrowerAccount.address), 'from the borrower by default')
  const part = (await api.get(`/credit/advances/${advance.advanceId}/repay-transactions?amountAtomic=${usdc(50)}&from=${clientAccount.address}`)).body as ChainStepsView
  t.same([part.amountAtomic, part.transactions[0]!.from], [usdc(50).toString(), clientAccount.address], 'a part, from another payer')

  const receipt = await borrower.repay(borrowerChain, advance.advanceId)
  t.equal(receipt.repaid, true, 'the exact amounts repay the advance')
  t.equal((await borrower.advance(advance.advanceId)).state, 'repaid')
  const done = await borrower.repayTransactions(advance.advanceId).catch((e: unknown) => e)
  t.ok(done instanceof CreditApiError && done.status === 409 && done.code === 'advance_not_open', 'nothing owed: nothing to sign')
})

t.test('llms.txt and the OpenAPI document point to the catalog instead of restating call signatures', async (t) => {
  const llms = (await new CreditClient(h.url).get('/llms.txt')).body as string
  for (const [name, text] of [['llms.txt', llms], ['openapi.json', JSON.stringify(doc)]] as const) {
    // The job key's rule (the catalog's `keyRule`): keccak256 of the job id's bytes. A failure note's hash (noteHash) is
    // keccak256 too, and that one is stated where it is used.
    t.notMatch(text, /keccak256\((utf8|stringToBytes|toBytes|toHex|jobId)|jobKey\s*=/, `${name} does not restate the key rule`)
    t.notMatch(text, /(fundJob|postCollateral|repay|paySupplier)\(\w/, `${name} does not restate a call's arguments`)
  }
  for (const route of ['/credit/jobs/{jobId}/funding-transactions', '/credit/jobs/{jobId}/collateral-transactions', '/credit/advances/{advanceId}/repay-transactions']) {
    t.ok(doc['paths'][route]?.['get'], `${route} is documented`)
    t.match(llms, route.replace('{jobId}', 'job_1').replace('{advanceId}', '<advanceId>'), `llms.txt names ${route}`)
  }
  t.match(llms, /catalog's "contracts"/)
})
