// outsider29's scripts: what several of them set up. A borrower's job as llms.txt has it (a client funds it, the
// borrower registers it and posts and reports collateral), and the embedded devnet's other network for a stranger.
import { createPublicClient, createWalletClient, defineChain, http, parseAbi, parseEther, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { catalog, fresh, fundJob, keys, net, ok, send, signIn } from '../outsider24-scripts/doc.ts'

/** A fresh borrower and client (both signed in), the client's job of `receivable` registered by the borrower, `collateral` posted and reported. */
export async function registeredJob(receivable: bigint, collateral: bigint, dueAt = new Date(Date.now() + 2 * 86400_000).toISOString()) {
  const borrower = await fresh(collateral)
  const bt = await signIn(borrower)
  const client = await fresh(receivable, keys.jobClient)
  const ct = await signIn(client)
  const { jobId, fundingTxHash } = await fundJob(borrower, client, receivable)
  await ok('POST', '/credit/jobs', { jobId, network: net.slug, asset: 'USDC', agent: borrower.address, receivableAtomic: String(receivable), dueAt, fundingTxHash }, bt, 201)
  const posted = collateral > 0n ? await postCollateral(borrower, bt, jobId, collateral) : ''
  return { borrower, bt, client, ct, jobId, fundingTxHash, posted, dueAt }
}

/** The borrower's served approve + postCollateral, then its report: the postCollateral's hash. */
export async function postCollateral(borrower: PrivateKeyAccount, token: string, jobId: string, amount: bigint, report = true): Promise<Hex> {
  const col = await ok('GET', `/credit/jobs/${jobId}/collateral-transactions?amountAtomic=${amount}`)
  let hash = '' as Hex
  for (const tx of col.transactions) hash = await send(borrower, tx)
  if (report) await ok('POST', `/credit/jobs/${jobId}/collateral`, { amountAtomic: String(amount), txHash: hash }, token, 201)
  return hash
}

/** The catalog's second network: a client, a wallet per key, and a stranger there with gas, `usdc` and its approve of the credit contract. */
export async function strangerOnOtherNetwork(usdc: bigint) {
  const other = catalog.networks[1]
  const chain = defineChain({ id: other.chainId, name: other.slug, nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [other.rpcUrl] } } })
  const pub = createPublicClient({ chain, transport: http() })
  const walletOf = (k: Hex) => createWalletClient({ account: privateKeyToAccount(k), chain, transport: http() })
  const token = other.assets[0].address as Hex
  const erc20 = parseAbi(['function transfer(address,uint256) returns (bool)', 'function approve(address,uint256) returns (bool)'])
  const wait = async (h: Hex) => { const r = await pub.waitForTransactionReceipt({ hash: h }); if (r.status !== 'success') throw new Error(`reverted ${h}`); return h }
  const key = generatePrivateKey()
  const stranger = privateKeyToAccount(key)
  await wait(await walletOf(keys.deployer).sendTransaction({ to: stranger.address, value: parseEther('1') }))
  await wait(await walletOf(keys.borrower).writeContract({ address: token, abi: erc20, functionName: 'transfer', args: [stranger.address, usdc] }))
  await wait(await walletOf(key).writeContract({ address: token, abi: erc20, functionName: 'approve', args: [other.creditContract, usdc] }))
  return { other, token, stranger, wallet: walletOf(key), wait, abi: catalog.contracts.creditFacility.abi }
}
