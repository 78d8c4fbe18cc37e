// The on-chain half of an agent's work, with viem: fund a session key, send the unsigned transactions the service
// returns (setup approvals, paySupplier, a job's funding, collateral, repayment), or build those itself. What the
// service verifies afterwards is exactly what these send.
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  getAddress,
  http,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
} from 'viem'
import { networkChain } from '../chain/clients.ts'
import { findToken, type NetworkConfig, type TokenConfig } from '../chain/config.ts'
import { jobKey } from '../chain/ids.ts'
import type { UnsignedTransaction } from '../chain/transactions.ts'
import { buildFundJobTransactions, buildPostCollateralTransactions, buildRepayTransactions, type Party } from '../chain/transactions-v2.ts'

/** An unsigned transaction as the API returns it (amounts as decimal strings). */
export interface WireTransaction {
  chainId: number
  to: string
  data: string
  value: string
  gas: string
}

/**
 * What an agent needs to know of a network. The catalog's entry (`networks[]` of /.well-known/service.json) has it all:
 * `ChainAgent.fromCatalog`. The service's own NetworkConfig has it too.
 */
export type AgentNetwork = Pick<NetworkConfig, 'slug' | 'chainId' | 'rpcUrl' | 'creditContract' | 'tokens'> & { multicall3?: Address }

/** A network as the catalog publishes it (its `assets` are the tokens; its rpcUrl is null when private). */
export type CatalogNetworkEntry = { slug: string; chainId: number; rpcUrl: string | null; creditContract: string; assets: Array<Omit<TokenConfig, 'address'> & { address: string }> }

export class ChainAgent {
  readonly network: AgentNetwork
  readonly account: LocalAccount
  readonly publicClient: PublicClient
  readonly #wallet

  /** An agent on a network read from the catalog; `rpcUrl` when the catalog does not publish one (or to use another). */
  static fromCatalog(network: CatalogNetworkEntry, account: LocalAccount, rpcUrl?: string): ChainAgent {
    const url = rpcUrl ?? network.rpcUrl
    if (url === null) throw new Error(`the catalog publishes no RPC URL for ${network.slug}: pass one`)
    return new ChainAgent({ slug: network.slug, chainId: network.chainId, rpcUrl: url, creditContract: getAddress(network.creditContract), tokens: network.assets.map((a) => ({ ...a, address: getAddress(a.address) })) }, account)
  }

  constructor(network: AgentNetwork, account: LocalAccount) {
    this.network = network
    this.account = account
    const chain = networkChain(network)
    const transport = http(network.rpcUrl)
    this.publicClient = createPublicClient({ chain, transport, pollingInterval: 50 }) as PublicClient
    this.#wallet = createWalletClient({ account, chain, transport, pollingInterval: 50 })
  }

  token(symbol: string): Address {
    return findToken(this.network, symbol).address
  }

  async #mined(hash: Hash): Promise<TransactionReceipt> {
    const receipt = await this.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 })
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`)
    return receipt
  }

  /** Sends an unsigned transaction from the API (setup approve, paySupplier) and waits for it. */
  async sendUnsigned(tx: WireTransaction): Promise<Hash> {
    if (tx.chainId !== this.network.chainId) throw new Error(`transaction for chain ${tx.chainId}, agent on ${this.network.chainId}`)
    const hash = await this.#wallet.sendTransaction({ to: getAddress(tx.to), data: tx.data as Hex, value: BigInt(tx.value), gas: BigInt(tx.gas), chain: undefined })
    await this.#mined(hash)
    return hash
  }

  async transferToken(symbol: string, to: Address, amountAtomic: bigint): Promise<Hash> {
    const hash = await this.#wallet.writeContract({ address: this.token(symbol), abi: erc20Abi, functionName: 'transfer', args: [to, amountAtomic], chain: undefined })
    await this.#mined(hash)
    return hash
  }

  async sendGas(to: Address, wei: bigint): Promise<Hash> {
    const hash = await this.#wallet.sendTransaction({ to, value: wei, chain: undefined })
    await this.#mined(hash)
    return hash
  }

  async approveCredit(symbol: string, amountAtomic: bigint): Promise<Hash> {
    const hash = await this.#wallet.writeContract({
      address: this.token(symbol),
      abi: erc20Abi,
      functionName: 'approve',
      args: [this.network.creditContract, amountAtomic],
      chain: undefined,
    })
    await this.#mined(hash)
    return hash
  }

  /**
   * Sends unsigned transactions in order (an approve, then the credit contract's call), each mined before the next is
   * sent; returns the hashes. The SDK gets them from the service's routes (GET .../funding-transactions and the like).
   */
  async sendAll(transactions: readonly WireTransaction[]): Promise<Hash[]> {
    const hashes: Hash[] = []
    for (const tx of transactions) hashes.push(await this.sendUnsigned(tx))
    return hashes
  }

  // The direct calls below build the same transactions as the service's routes (src/chain/transactions-v2.ts, from
  // the compiled ABI), without asking the service: for tests and for agents that hold the catalog but not the routes.

  /** The job's key on this agent's network (the catalog's contracts.keys rule: chainId, creditContract, jobId). */
  jobKey(jobId: string): Hex {
    return jobKey(this.network, jobId)
  }

  /**
   * The job's client escrows the receivable: approve, then fundJob(jobKey, ...) under the job's key on this network.
   * Returns the fundJob hash. `key`: another key (a test's funding under the legacy rule, keccak256(utf8(jobId))).
   */
  async fundJob(jobId: string, symbol: string, receivableAtomic: bigint, borrower: Address, key: Hex = this.jobKey(jobId)): Promise<Hash> {
    return this.#sendLast(buildFundJobTransactions(this.#party(), { jobKey: key, asset: symbol, amountAtomic: receivableAtomic, borrower }))
  }

  /** `key`: the key the job was funded under (its jobKey, GET /credit/jobs/{jobId}); by default its key on this network. */
  async postCollateral(jobId: string, symbol: string, amountAtomic: bigint, key: Hex = this.jobKey(jobId)): Promise<Hash> {
    return this.#sendLast(buildPostCollateralTransactions(this.#party(), { jobKey: key, asset: symbol, amountAtomic }))
  }

  /**
   * repay(advanceKey, amount): the contract pulls at most what is still owed (the lender's part first, then the
   * reserve's share) and pays it to the advance's lender (its session wallet) and the reserve.
   */
  async repay(advanceKey: Hex, symbol: string, amountAtomic: bigint): Promise<Hash> {
    return this.#sendLast(buildRepayTransactions(this.#party(), { offerKey: advanceKey, asset: symbol, amountOwedAtomic: amountAtomic }))
  }

  async balanceOf(symbol: string, holder: Address): Promise<bigint> {
    return this.publicClient.readContract({ address: this.token(symbol), abi: erc20Abi, functionName: 'balanceOf', args: [holder] })
  }

  #party(): Party {
    return { network: this.network, contract: this.network.creditContract, from: this.account.address }
  }

  async #sendLast(transactions: readonly UnsignedTransaction[]): Promise<Hash> {
    const hashes = await this.sendAll(transactions.map((tx) => ({ chainId: tx.chainId, to: tx.to, data: tx.data, value: tx.value.toString(), gas: tx.gas.toString() })))
    return hashes[hashes.length - 1] as Hash
  }
}
