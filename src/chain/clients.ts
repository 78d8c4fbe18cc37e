// viem clients for one configured network: a public client for the reads on the request path (proofs, sign-in), which
// fails fast, and, when the operator key is known, the operator's wallet client (with viem's nonceManager, so
// parallel sends do not collide) and a public client of its own that waits patiently for its transactions' receipts.
//
// Why two speeds: a request that needs a chain read must answer 503 chain_unavailable within about a second when the
// chain stalls (issue 10, hole 7), not after 3 tries of 10 s; but an operator transaction already sent must be
// followed to its receipt, so its calls keep the long deadline and the retries.
import {
  BaseError,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  keccak256,
  nonceManager,
  type Address,
  type Hex,
  type Chain,
  type PrivateKeyAccount,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from './config.ts'

export type OperatorWallet = {
  account: PrivateKeyAccount
  walletClient: WalletClient<Transport, Chain, PrivateKeyAccount>
  /** Simulations, receipts and log searches of the operator's own transactions: long deadline, retries. */
  publicClient: PublicClient<Transport, Chain>
  /** Runs `submit` (a transaction's nonce taken and the transaction sent) after this address's earlier ones (inTurn). */
  inTurn: <T>(submit: () => Promise<T>) => Promise<T>
  /** The gas limit to send a transaction estimated at `estimate` with: gasWithMargin under the network's block gas limit. */
  gasFor: (estimate: bigint) => Promise<bigint>
}

export type NetworkClients = {
  network: NetworkConfig
  chain: Chain
  publicClient: PublicClient<Transport, Chain>
  /** Undefined when the network has no operator key (read-only service). */
  operator: OperatorWallet | undefined
}

/** Deadline of one read on the request path when the network names none: well under a second, yet above the tail
 * latency of public RPC providers (typically 100-300 ms). */
export const rpcTimeoutMsDefault = 750
/** Operator transactions: the deadline and retries of one RPC call while following a transaction already sent. */
export const operatorRpcTimeoutMs = 10_000
export const operatorRpcRetryCount = 2

export type ClientOptions = {
  /** Retries of a failed read inside viem (default 0: the deadline is the whole call's, and a 503 says retry). */
  retryCount?: number
  /** Deadline of one read (default: the network's rpcTimeoutMs, else rpcTimeoutMsDefault). */
  timeoutMs?: number
}

export function networkChain(network: Pick<NetworkConfig, 'slug' | 'chainId' | 'rpcUrl'> & { multicall3?: Address }): Chain {
  return defineChain({
    id: network.chainId,
    name: network.slug,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [network.rpcUrl] } },
    ...(network.multicall3 === undefined ? {} : { contracts: { multicall3: { address: network.multicall3 } } }),
  })
}

export function createNetworkClients(network: NetworkConfig, options: ClientOptions = {}): NetworkClients {
  const chain = networkChain(network)
  const transport = http(network.rpcUrl, {
    retryCount: options.retryCount ?? 0,
    timeout: options.timeoutMs ?? network.rpcTimeoutMs ?? rpcTimeoutMsDefault,
  })
  const publicClient = createPublicClient({ chain, transport, pollingInterval: network.pollingIntervalMs })
  const operator = network.operatorPrivateKey === undefined ? undefined : senderWallet(network, network.operatorPrivateKey)
  return { network, chain, publicClient, operator }
}

/**
 * A wallet of the service that sends transactions on the network (the operator's; the x402 facilitator's), with the
 * patient transport of transactions already sent and viem's nonceManager (its nonces are counted per address).
 */
export function senderWallet(network: NetworkConfig, privateKey: Hex, options: { turnWaitMaxMs?: number; rpcTimeoutMs?: number } = {}): OperatorWallet {
  const turnWaitMaxMs = options.turnWaitMaxMs ?? operatorRpcTimeoutMs
  const chain = networkChain(network)
  const account = privateKeyToAccount(privateKey, { nonceManager })
  const patient = sentOnce(http(network.rpcUrl, { retryCount: operatorRpcRetryCount, timeout: options.rpcTimeoutMs ?? operatorRpcTimeoutMs }))
  const key = `${network.chainId}:${account.address}`
  const publicClient = createPublicClient({ chain, transport: patient, pollingInterval: network.pollingIntervalMs })
  return {
    account,
    walletClient: createWalletClient({ account, chain, transport: patient, pollingInterval: network.pollingIntervalMs }),
    publicClient,
    inTurn: (submit) => inTurn(key, () => resubmittedOnNonceRefusal(submit), turnWaitMaxMs),
    gasFor: async (estimate) => gasWithMargin(estimate, await blockGasLimitOf(network, publicClient)),
  }
}

/**
 * Runs a submission, and once more when the node refused its transaction for its nonce (refusedForNonce): another
 * transaction of the address holds that nonce, and viem's nonce manager, reset by the failure, reads the pending count
 * again. The holder: an earlier send of this service whose call timed out (the 10 s deadline: its caller was answered
 * 503) and that reached the node late, after this one had read the pending count and before its own transaction came
 * (reachable: test/chain/sender-in-turn.test.ts holds the late one on the way), or another process sending with the
 * key. viem re-reads the count after every failed send already, so a timed-out send that never reaches the node leaves
 * no gap; only this window remained. The refused transaction is not this one (sentOnce answers this one's hash when the
 * node knows it: a gateway that sent it twice), so the action is sent once. When the node does not know it yet (a
 * load-balanced RPC whose other node answered), the action may be sent a second time: every sender of the service is
 * guarded by contract state (settleJob, failJob, liquidate: JobNotOpen, NothingOwed; transferWithAuthorization: its
 * nonce; an EIP-6492 factory deployment: the address has code), so the second reverts and spends only its gas.
 */
async function resubmittedOnNonceRefusal<T>(submit: () => Promise<T>): Promise<T> {
  try {
    return await submit()
  } catch (error) {
    if (!refusedForNonce(error)) throw error
    return await submit()
  }
}

/**
 * The transport `inner` with one change: a raw transaction the node refuses as already there ("already known",
 * "nonce too low", "replacement transaction underpriced") is looked up by its own hash, and when the node knows it (in
 * its pool or mined) the send answers that hash, as a send the node accepted. Reachable behind an RPC gateway that
 * sends a raw transaction again when it lost the first answer (to the same node or another one behind it): the first
 * reached the pool and was mined, the second was refused "nonce too low", and resubmittedOnNonceRefusal, taking the
 * refusal for another transaction's, signed and sent the action once more with a fresh nonce: a value transfer paid
 * twice; a settlement, a failure, a liquidation or an x402 transferWithAuthorization sent twice (the second reverted:
 * the contract's state or the authorization's nonce guards them, but its gas was spent, and the facilitator answered
 * "not settled" for a payment made; review27, test/chain/sender-in-turn.test.ts, test/chain/sent-once.test.ts). Only a refusal of that kind costs the lookup (one eth_getTransactionByHash).
 */
export function sentOnce<T extends Transport>(inner: T): T {
  return ((parameters: Parameters<T>[0]) => {
    const transport = inner(parameters)
    const request = (async (args: { method: string; params?: unknown }, options?: unknown) => {
      try {
        return await transport.request(args as never, options as never)
      } catch (error) {
        if (args.method !== 'eth_sendRawTransaction' || !(error instanceof BaseError) || !alreadyThere.test(error.message)) throw error
        const [raw] = args.params as [Hex]
        const hash = keccak256(raw)
        const known = await transport.request({ method: 'eth_getTransactionByHash', params: [hash] } as never).catch(() => null)
        if (known === null || known === undefined) throw error
        return hash
      }
    }) as typeof transport.request
    return { ...transport, request }
  }) as T
}

/** A node's refusals of a raw transaction whose nonce is taken, perhaps by this very transaction (sentOnce). */
const alreadyThere = /already known|already imported|nonce too low|replacement transaction underpriced/i

/**
 * Whether the node refused a transaction because its nonce is taken: mined already ("nonce too low") or held by a
 * transaction in its pool that this one does not outbid ("replacement transaction underpriced"). Not viem's whole
 * NonceTooLowError, whose "already known" is this very transaction in the pool, which must not be sent again.
 */
export function refusedForNonce(error: unknown): boolean {
  return error instanceof BaseError && /nonce too low|replacement transaction underpriced/i.test(error.message)
}

/** The submission each sender address (per chain) last began, settled or not: the next one waits for it. */
const submissions = new Map<string, Promise<unknown>>()

/** A submission that waited `turnWaitMaxMs` for the ones before it (an RPC that holds them) and was not sent. */
export class SenderBusyError extends Error {
  override readonly name = 'SenderBusyError'
  constructor(waitedMs: number) {
    super(`the sender's earlier transactions were still being sent after ${waitedMs} ms (the RPC holds them); this one was not sent`)
  }
}

/**
 * Runs `submit` once every submission begun before it for the same key has settled: one transaction of an address is
 * signed and sent at a time, so each takes its nonce after the one before is in the node's pool. viem's nonceManager
 * alone gave two concurrent transactions of an address that had sent none both nonce 0 (it trusts the node's pending
 * count unless the last nonce it handed out is above 0), and the node refused the second "replacement transaction
 * underpriced": a failure and a liquidation sent at once by an operator's first transactions, the second answered 503
 * (test/api/outsider23-operator-race.test.ts on a loaded machine). Only the submission waits, not the receipt, and at
 * most `waitMaxMs` for its turn: behind an RPC that holds submissions, one that would queue longer is refused
 * (SenderBusyError, not sent; the callers answer 503) instead of every later one waiting one timeout more than the one
 * before it (review25: three sends begun together failed at 10, 20 and 30 s). The order holds either way: a refused
 * submission's place in the queue passes once the one before it settles.
 */
function inTurn<T>(key: string, submit: () => Promise<T>, waitMaxMs: number): Promise<T> {
  let state: 'waiting' | 'started' | 'refused' = 'waiting'
  const run = (): Promise<T> => {
    if (state === 'refused') return Promise.reject(new SenderBusyError(waitMaxMs))
    state = 'started'
    return submit()
  }
  const turn = (submissions.get(key) ?? Promise.resolve()).then(run, run)
  const settled = turn.then(() => undefined, () => undefined)
  submissions.set(key, settled)
  void settled.then(() => {
    if (submissions.get(key) === settled) submissions.delete(key)
  })
  let timer: NodeJS.Timeout | undefined
  const waited = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (state !== 'waiting') return
      state = 'refused'
      reject(new SenderBusyError(waitMaxMs))
    }, waitMaxMs)
    timer.unref()
  })
  void turn.then(() => clearTimeout(timer), () => clearTimeout(timer))
  return Promise.race([turn, waited])
}

/**
 * Gas over its estimate a transaction of the service is sent with, in percent. An estimate is exact for the state it
 * was made on: a transaction mined after another that changed its path (a failure of a job mined after the
 * liquidation of its last unresolved advance closes the job and pays the collateral left back) needs more. Measured
 * on anvil (test/api/outsider23-operator-race.test.ts): such a failJob estimated at 118,937 needed a limit of 154,152
 * (30 % more; the storage it clears refunds gas at the end, so it uses 125,151 but must start with more), so 25 % ran
 * out of gas and 50 % does not. Gas not used is not paid: the margin costs only the balance it must cover.
 */
export const gasMarginPercent = 50n
/**
 * The most gas one transaction may carry: EIP-7825's cap (2^24). A chain's block gas limit may be lower still (a
 * private chain, an L2 or a devnet configured so): the margin is capped by that too (gasWithMargin).
 */
export const transactionGasCap = 16_777_216n

/**
 * The gas limit to send with: the estimate plus gasMarginPercent, capped by the chain's block gas limit and by
 * transactionGasCap, never below the estimate. A limit above the block's is refused by the node (no block could hold
 * the transaction), though the transaction fits without the margin: capped only at 2^24, a chain whose blocks take
 * less than an estimate and a half refused the operator's and the facilitator's transactions (review25).
 */
export function gasWithMargin(estimate: bigint, blockGasLimit: bigint): bigint {
  const padded = estimate + (estimate * gasMarginPercent) / 100n
  const cap = blockGasLimit >= blockGasLimitMeaningful && blockGasLimit < transactionGasCap ? blockGasLimit : transactionGasCap
  if (padded <= cap) return padded
  return estimate > cap ? estimate : cap
}

/**
 * The least block gas limit taken as one: a block that could not hold the cheapest transaction (21,000 gas) says
 * nothing of the chain's limit (a chain or an RPC that answers 0 for a field it does not keep, a node that answers
 * garbage); under it, the cap is transactionGasCap alone. Before (review27), a block gas limit of 0 took every
 * transaction's margin away (sent with its bare estimate, the one that ran out of gas in a race).
 */
export const blockGasLimitMeaningful = 21_000n

/**
 * How old a network's known block gas limit may be before a sender reads it again (one eth_getBlockByNumber). A chain
 * moves its limit slowly (by 1/1024 a block at most on Ethereum), and the service's chain follower notes it from every
 * head it reads (noteBlockGasLimit), so a sender rarely reads it itself.
 */
export const blockGasLimitMaxAgeMs = 60_000

/** The latest block gas limit known of each network (by chain id and RPC URL), and when it was read. */
const blockGasLimits = new Map<string, { gasLimit: bigint; readAtMs: number }>()
/** Reads of a block gas limit under way, by the same key: senders asking meanwhile share one. */
const blockGasLimitReads = new Map<string, Promise<bigint>>()

function blockGasLimitKey(network: Pick<NetworkConfig, 'chainId' | 'rpcUrl'>): string {
  return `${network.chainId}:${network.rpcUrl}`
}

/** Notes the gas limit of a block of the network just read (the pollers' head): the senders' cap needs no read of its own. */
export function noteBlockGasLimit(network: Pick<NetworkConfig, 'chainId' | 'rpcUrl'>, gasLimit: bigint): void {
  blockGasLimits.set(blockGasLimitKey(network), { gasLimit, readAtMs: performance.now() })
}

/**
 * The network's block gas limit: the one noted within blockGasLimitMaxAgeMs, else the latest block's, read once for
 * every sender asking meanwhile. A failed read is thrown (the RPC that just answered the estimate failing now).
 */
function blockGasLimitOf(network: Pick<NetworkConfig, 'chainId' | 'rpcUrl'>, publicClient: Pick<PublicClient, 'getBlock'>): Promise<bigint> {
  const key = blockGasLimitKey(network)
  const known = blockGasLimits.get(key)
  if (known !== undefined && performance.now() - known.readAtMs <= blockGasLimitMaxAgeMs) return Promise.resolve(known.gasLimit)
  let reading = blockGasLimitReads.get(key)
  if (reading === undefined) {
    reading = publicClient.getBlock({ blockTag: 'latest' }).then((block) => {
      noteBlockGasLimit(network, block.gasLimit)
      return block.gasLimit
    })
    blockGasLimitReads.set(key, reading)
    const forget = (): void => void blockGasLimitReads.delete(key)
    reading.then(forget, forget)
  }
  return reading
}

/** Clients of every configured network, by slug. */
export function createChainClients(networks: readonly NetworkConfig[], options: ClientOptions = {}): Map<string, NetworkClients> {
  return new Map(networks.map((network) => [network.slug, createNetworkClients(network, options)]))
}
