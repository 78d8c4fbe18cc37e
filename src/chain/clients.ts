// viem clients for one configured network: a public client for reads and receipts, and, when the operator key is
// known, a wallet client for the operator's transactions (with viem's nonceManager, so parallel sends do not collide).
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  nonceManager,
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
}

export type NetworkClients = {
  network: NetworkConfig
  chain: Chain
  publicClient: PublicClient<Transport, Chain>
  /** Undefined when the network has no operator key (read-only service). */
  operator: OperatorWallet | undefined
}

export type ClientOptions = {
  /** Retries of a failed RPC request inside viem; the watcher wants 0 to see an outage at once. */
  retryCount?: number
  timeoutMs?: number
}

export function networkChain(network: NetworkConfig): Chain {
  return defineChain({
    id: network.chainId,
    name: network.slug,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [network.rpcUrl] } },
    contracts: { multicall3: { address: network.multicall3 } },
  })
}

export function createNetworkClients(network: NetworkConfig, options: ClientOptions = {}): NetworkClients {
  const chain = networkChain(network)
  const transport = http(network.rpcUrl, { retryCount: options.retryCount ?? 2, timeout: options.timeoutMs ?? 10_000 })
  const publicClient = createPublicClient({ chain, transport, pollingInterval: network.pollingIntervalMs })
  let operator: OperatorWallet | undefined
  if (network.operatorPrivateKey !== undefined) {
    const account = privateKeyToAccount(network.operatorPrivateKey, { nonceManager })
    operator = {
      account,
      walletClient: createWalletClient({ account, chain, transport, pollingInterval: network.pollingIntervalMs }),
    }
  }
  return { network, chain, publicClient, operator }
}

/** Clients of every configured network, by slug. */
export function createChainClients(networks: readonly NetworkConfig[], options: ClientOptions = {}): Map<string, NetworkClients> {
  return new Map(networks.map((network) => [network.slug, createNetworkClients(network, options)]))
}
