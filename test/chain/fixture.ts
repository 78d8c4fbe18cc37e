// Shared setup of the chain tests: one devnet per test file (real anvil chains), typed helpers to act as the demo
// accounts and a session key, and exact balance reads.
import type { Test } from 'tap'
import {
  createTestClient,
  createWalletClient,
  erc20Abi,
  http,
  type Address,
  type Chain,
  type Hex,
  type PrivateKeyAccount,
  type Transport,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { compileContracts } from '../../src/tools/compile-contracts.ts'
import { creditFacilityAbi, testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { createNetworkClients, networkChain, type NetworkClients } from '../../src/chain/clients.ts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { startDevnet, type DemoAccounts, type DemoRole, type Devnet } from '../../src/chain/devnet.ts'
import { toContractRevert, ContractRevertError } from '../../src/chain/operator.ts'
import type { UnsignedTransaction } from '../../src/chain/transactions.ts'

export const USDC = 10n ** 6n

export type Actor = { account: PrivateKeyAccount; wallet: WalletClient<Transport, Chain, PrivateKeyAccount> }

export type Fixture = {
  devnet: Devnet
  accounts: DemoAccounts
  network: NetworkConfig
  clients: NetworkClients
  token: Address
  actor(role: DemoRole | Hex): Actor
  balance(holder: Address): Promise<bigint>
  allowance(owner: Address): Promise<bigint>
  reserve(): Promise<bigint>
  /** Simulates then sends a credit contract call as `who`; throws ContractRevertError on a revert. */
  call(who: Actor, functionName: string, args: readonly unknown[]): Promise<Hex>
  /** Sends without simulation and with a fixed gas limit, so that a revert lands on chain. */
  sendRaw(who: Actor, functionName: string, args: readonly unknown[]): Promise<Hex>
  approve(who: Actor, amount: bigint): Promise<void>
  transfer(who: Actor, to: Address, amount: bigint): Promise<void>
  signAndSend(privateKey: Hex, tx: UnsignedTransaction): Promise<Hex>
  fundGas(address: Address): Promise<void>
  waitSuccess(hash: Hex): Promise<void>
}

export async function setupDevnet(t: Test, networkIndex = 0): Promise<Fixture> {
  compileContracts()
  const devnet = await startDevnet()
  t.teardown(() => devnet.stop())
  const network = devnet.networks[networkIndex] as NetworkConfig
  const clients = createNetworkClients(network)
  const chain = networkChain(network)
  const transport = http(network.rpcUrl)
  const testClient = createTestClient({ chain, transport, mode: 'anvil' })
  const token = network.tokens[0]?.address as Address
  const actors = new Map<string, Actor>()
  const { publicClient } = clients

  const actor = (who: DemoRole | Hex): Actor => {
    const key = who.startsWith('0x') ? (who as Hex) : devnet.accounts[who as DemoRole].privateKey
    let existing = actors.get(key)
    if (existing === undefined) {
      const account = privateKeyToAccount(key)
      existing = { account, wallet: createWalletClient({ account, chain, transport, pollingInterval: 50 }) }
      actors.set(key, existing)
    }
    return existing
  }
  const waitSuccess = async (hash: Hex): Promise<void> => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`)
  }
  const call = async (who: Actor, functionName: string, args: readonly unknown[]): Promise<Hex> => {
    let request
    try {
      ;({ request } = await publicClient.simulateContract({
        account: who.account,
        address: network.creditContract,
        abi: [...creditFacilityAbi, ...testStablecoinAbi.filter((item) => item.type === 'error')],
        functionName,
        args,
      } as Parameters<typeof publicClient.simulateContract>[0]))
    } catch (error) {
      throw toContractRevert(network.slug, error)
    }
    const hash = await who.wallet.writeContract(request as Parameters<typeof who.wallet.writeContract>[0])
    await waitSuccess(hash)
    return hash
  }
  const sendRaw = async (who: Actor, functionName: string, args: readonly unknown[]): Promise<Hex> => {
    const hash = await who.wallet.writeContract({
      address: network.creditContract,
      abi: creditFacilityAbi,
      functionName,
      args,
      gas: 300_000n,
    } as Parameters<typeof who.wallet.writeContract>[0])
    await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    return hash
  }
  return {
    devnet,
    accounts: devnet.accounts,
    network,
    clients,
    token,
    actor,
    balance: (holder) => publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [holder] }),
    allowance: (owner) =>
      publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [owner, network.creditContract] }),
    reserve: () => publicClient.readContract({ address: network.creditContract, abi: creditFacilityAbi, functionName: 'reserveOf', args: [token] }),
    call,
    sendRaw,
    approve: async (who, amount) => {
      await waitSuccess(
        await who.wallet.writeContract({ address: token, abi: erc20Abi, functionName: 'approve', args: [network.creditContract, amount] }),
      )
    },
    transfer: async (who, to, amount) => {
      await waitSuccess(await who.wallet.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [to, amount] }))
    },
    signAndSend: async (privateKey, tx) => {
      const who = actor(privateKey)
      const hash = await who.wallet.sendTransaction({ to: tx.to, data: tx.data, value: tx.value, gas: tx.gas, chain })
      await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      return hash
    },
    fundGas: (address) => testClient.setBalance({ address, value: 10n ** 18n }),
    waitSuccess,
  }
}

/** Asserts that `promise` rejects with the contract's custom error `errorName`. */
export async function rejectsWith(t: Test, promise: Promise<unknown>, errorName: string, message: string): Promise<void> {
  try {
    await promise
    t.fail(`${message}: expected ${errorName}, but it succeeded`)
  } catch (error) {
    if (!(error instanceof ContractRevertError)) {
      t.fail(`${message}: expected ${errorName}, got ${(error as Error).message}`)
      return
    }
    t.equal(error.errorName, errorName, message)
  }
}
