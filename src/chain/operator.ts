// The operator's own transactions on the credit contract: settle a job and liquidate an advance. Each call is
// simulated first (so a misuse surfaces as the contract's named custom error without spending gas), then sent
// with the operator's nonce-managed account, and awaited to its receipt.
import { BaseError, ContractFunctionRevertedError, getAddress, parseEventLogs, zeroHash, type Address, type Hex } from 'viem'
import { creditFacilityAbi } from './artifacts.ts'
import type { NetworkClients, OperatorWallet } from './clients.ts'
import { findToken } from './config.ts'
import { idKey } from './ids.ts'

export type OperatorReceipt = {
  network: string
  txHash: Hex
  blockNumber: bigint
  logs: ReturnType<typeof parseEventLogs<typeof creditFacilityAbi>>
}

export class OperatorUnavailableError extends Error {
  override readonly name = 'OperatorUnavailableError'
  constructor(readonly network: string) {
    super(`no operator key configured for network ${network}`)
  }
}

/** The contract refused the call; `errorName` is its custom error (e.g. JobAlreadySettled, OverHeld). */
export class ContractRevertError extends Error {
  override readonly name = 'ContractRevertError'
  constructor(
    readonly network: string,
    readonly errorName: string,
    readonly errorArgs: readonly unknown[],
    override readonly cause: unknown,
  ) {
    super(`credit contract on ${network} reverted: ${errorName}`)
  }
}

function operatorOf(clients: NetworkClients): OperatorWallet {
  if (clients.operator === undefined) throw new OperatorUnavailableError(clients.network.slug)
  return clients.operator
}

/** Maps viem's simulation error to ContractRevertError when the contract reverted; rethrows anything else. */
export function toContractRevert(network: string, error: unknown): unknown {
  if (error instanceof BaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError)
    if (reverted instanceof ContractFunctionRevertedError) {
      return new ContractRevertError(network, reverted.data?.errorName ?? reverted.reason ?? 'unknown', reverted.data?.args ?? [], error)
    }
  }
  return error
}

async function send(
  clients: NetworkClients,
  call: { functionName: 'settleJob' | 'liquidate'; args: readonly unknown[] },
): Promise<OperatorReceipt> {
  const operator = operatorOf(clients)
  const { network } = clients
  const { publicClient } = operator
  let request
  try {
    ;({ request } = await publicClient.simulateContract({
      account: operator.account,
      address: network.creditContract,
      abi: creditFacilityAbi,
      functionName: call.functionName,
      args: call.args,
    } as Parameters<typeof publicClient.simulateContract>[0]))
  } catch (error) {
    throw toContractRevert(network.slug, error)
  }
  const txHash = await operator.walletClient.writeContract(request as Parameters<typeof operator.walletClient.writeContract>[0])
  const receipt = await publicClient.waitForTransactionReceipt({
    hash: txHash,
    pollingInterval: network.pollingIntervalMs,
    confirmations: network.confirmations,
  })
  if (receipt.status !== 'success') {
    throw new ContractRevertError(network.slug, 'reverted', [], new Error(`transaction ${txHash} reverted`))
  }
  return {
    network: network.slug,
    txHash,
    blockNumber: receipt.blockNumber,
    logs: parseEventLogs({ abi: creditFacilityAbi, logs: receipt.logs }),
  }
}

export type SettleJobInput = {
  jobId: string
  /** Lenders paid first, in this order, from the job's escrow then collateral. */
  payouts: { advanceId: string; lender: Address; amountAtomic: bigint }[]
  /** The insurance share of the fees, into the reserve of the job's asset. */
  reserveAtomic: bigint
}

export async function sendSettleJob(clients: NetworkClients, input: SettleJobInput): Promise<OperatorReceipt> {
  return send(clients, {
    functionName: 'settleJob',
    args: [
      idKey(input.jobId),
      input.payouts.map((p) => idKey(p.advanceId)),
      input.payouts.map((p) => getAddress(p.lender)),
      input.payouts.map((p) => p.amountAtomic),
      input.reserveAtomic,
    ],
  })
}

export type LiquidateInput = {
  advanceId: string
  /** null for an advance backed by a source rather than a job: then only the reserve can pay. */
  jobId: string | null
  lender: Address
  asset: string
  fromRevenueAtomic: bigint
  fromCollateralAtomic: bigint
  fromReserveAtomic: bigint
}

export async function sendLiquidate(clients: NetworkClients, input: LiquidateInput): Promise<OperatorReceipt> {
  const token = findToken(clients.network, input.asset)
  return send(clients, {
    functionName: 'liquidate',
    args: [
      idKey(input.advanceId),
      input.jobId === null ? zeroHash : idKey(input.jobId),
      getAddress(input.lender),
      token.address,
      input.fromRevenueAtomic,
      input.fromCollateralAtomic,
      input.fromReserveAtomic,
    ],
  })
}

/** Blocks asked of eth_getLogs at once when looking for an earlier operator transaction (providers cap ranges). */
export const settlementSearchBlockRange = 2_000n
/** Ranges searched at most: a bound on the work of one lookup. */
export const settlementSearchRangesMax = 500

export type EarlierSettlement =
  | { eventName: 'JobSettled'; txHash: Hex; toLendersAtomic: bigint; toReserveAtomic: bigint; toBorrowerAtomic: bigint }
  | { eventName: 'Liquidated'; txHash: Hex; fromRevenueAtomic: bigint; fromCollateralAtomic: bigint; fromReserveAtomic: bigint }

/**
 * The operator transaction that already settled a job or liquidated an advance, searched from the block of
 * `sinceTxHash` (the job's funding, the advance's payment) onwards. The contract refuses a second settlement, so when
 * it says JobAlreadySettled the service finds the first one here and records it: a crash between an operator
 * transaction and its commit is repaired by the next attempt instead of leaving the job stuck.
 */
export async function findEarlierSettlement(
  clients: NetworkClients,
  target: { eventName: 'JobSettled'; jobId: string } | { eventName: 'Liquidated'; advanceId: string },
  sinceTxHash: Hex,
): Promise<EarlierSettlement | undefined> {
  const { network } = clients
  // The operator's patient client: a slow range must not read as "no earlier settlement".
  const publicClient = clients.operator?.publicClient ?? clients.publicClient
  const since = await publicClient.getTransactionReceipt({ hash: sinceTxHash })
  const head = await publicClient.getBlockNumber({ cacheTime: 0 })
  let fromBlock = since.blockNumber
  for (let ranges = 0; fromBlock <= head && ranges < settlementSearchRangesMax; ranges++) {
    const toBlock = fromBlock + settlementSearchBlockRange - 1n < head ? fromBlock + settlementSearchBlockRange - 1n : head
    if (target.eventName === 'JobSettled') {
      const [log] = await publicClient.getContractEvents({
        address: network.creditContract, abi: creditFacilityAbi, eventName: 'JobSettled', args: { jobKey: idKey(target.jobId) }, fromBlock, toBlock, strict: true,
      })
      if (log !== undefined) {
        return { eventName: 'JobSettled', txHash: log.transactionHash, toLendersAtomic: log.args.toLenders, toReserveAtomic: log.args.toReserve, toBorrowerAtomic: log.args.toBorrower }
      }
    } else {
      const [log] = await publicClient.getContractEvents({
        address: network.creditContract, abi: creditFacilityAbi, eventName: 'Liquidated', args: { advanceKey: idKey(target.advanceId) }, fromBlock, toBlock, strict: true,
      })
      if (log !== undefined) {
        return {
          eventName: 'Liquidated', txHash: log.transactionHash,
          fromRevenueAtomic: log.args.fromRevenue, fromCollateralAtomic: log.args.fromCollateral, fromReserveAtomic: log.args.fromReserve,
        }
      }
    }
    fromBlock = toBlock + 1n
  }
  return undefined
}
