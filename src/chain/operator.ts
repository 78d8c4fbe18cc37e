// The operator's own transactions on the credit contract (v2): settle a job, fail a job, liquidate an advance. Each call is
// simulated first (so a misuse surfaces as the contract's named custom error without spending gas), then sent
// with the operator's nonce-managed account, and awaited to its receipt.
import { BaseError, ContractFunctionRevertedError, type Hex } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'
import { type NetworkClients, type OperatorWallet } from './clients.ts'
import { decodeFacilityLog, facilityFact, type FacilityFact, type MinedLog } from './events-v2.ts'
import { contractAnswered } from './reclaim-window.ts'

export type OperatorReceipt = {
  network: string
  txHash: Hex
  blockNumber: bigint
  /** Every event of the credit contract in the transaction, decoded as the follower decodes them. */
  facts: FacilityFact[]
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

/**
 * The operator's call would be accepted by a later block, not the latest one: the chain's clock has not reached what
 * the service's clock already judged (an advance past due by the service's clock while the latest block is still at
 * or before its due second). Nothing was sent or changed; the same request succeeds once a later block is mined.
 */
export class ChainBehindError extends Error {
  override readonly name = 'ChainBehindError'
  constructor(
    readonly network: string,
    detail: string,
  ) {
    super(`the chain of network ${network} is behind: ${detail}; nothing changed, retry`)
  }
}

function operatorOf(clients: NetworkClients): OperatorWallet {
  if (clients.operator === undefined) throw new OperatorUnavailableError(clients.network.slug)
  return clients.operator
}

/**
 * Maps viem's simulation error to ContractRevertError when the contract reverted; rethrows anything else. Not an RPC
 * error viem reads as a revert (contractAnswered: a provider's -32603 internal error, no revert data), which before
 * review30 answered 409 with a code made of the provider's message (contract_internal_error), "refused, nothing was
 * recorded", for what is an outage to retry (503).
 */
export function toContractRevert(network: string, error: unknown): unknown {
  if (error instanceof BaseError && contractAnswered(error)) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError)
    if (reverted instanceof ContractFunctionRevertedError) {
      return new ContractRevertError(network, reverted.data?.errorName ?? reverted.reason ?? 'unknown', reverted.data?.args ?? [], error)
    }
  }
  return error
}

/** Sends of one operator call at most: the first, and one more when it reverted mined though its simulation passed. */
const SEND_ATTEMPTS = 2

async function send(
  clients: NetworkClients,
  call: { functionName: 'settleJob' | 'failJob' | 'liquidate'; args: readonly unknown[] },
): Promise<OperatorReceipt> {
  const operator = operatorOf(clients)
  const { network } = clients
  const { publicClient } = operator
  // A transaction whose simulation passed can still revert when mined: another operator transaction on the same job,
  // sent at once under another lock (a failure and a liquidation of its advance), mined first, changes what it does
  // (the job's last unresolved advance resolved, so this one closes the job and pays its collateral back) and its gas
  // estimate falls short. Nothing it did stands, so it is simulated again on the state it met: a refusal the contract
  // names is raised as such (NothingOwed, JobNotOpen: the callers' alreadyDone applies), and a call the contract no
  // longer refuses is sent once more. Before, the request answered 409 contract_reverted, "nothing was recorded", and
  // the same request sent again succeeded (an outsider's finding, test/api/outsider23-operator-race.test.ts).
  // Each is sent with a margin over its own estimate (gasWithMargin, under the block gas limit: operator.gasFor; the
  // estimate writeContract would make itself): the one mined second of such a pair no longer runs out of gas, and the
  // resend stays for the rest.
  for (let attempt = 1; ; attempt++) {
    let request
    let gas
    try {
      ;({ request } = await publicClient.simulateContract({
        account: operator.account,
        address: network.creditContract,
        abi: creditFacilityV2Abi,
        functionName: call.functionName,
        args: call.args,
      } as Parameters<typeof publicClient.simulateContract>[0]))
      gas = await operator.gasFor(await publicClient.estimateContractGas(request as Parameters<typeof publicClient.estimateContractGas>[0]))
    } catch (error) {
      throw toContractRevert(network.slug, error)
    }
    const txHash = await operator.inTurn(() => operator.walletClient.writeContract({ ...request, gas } as Parameters<typeof operator.walletClient.writeContract>[0]))
    const receipt = await publicClient.waitForTransactionReceipt({
      hash: txHash,
      pollingInterval: network.pollingIntervalMs,
      confirmations: network.confirmations,
    })
    if (receipt.status !== 'success') {
      if (attempt < SEND_ATTEMPTS) continue
      throw new ContractRevertError(network.slug, 'reverted', [], new Error(`transaction ${txHash} reverted`))
    }
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber })
    const facts = receipt.logs.flatMap((log) => {
      const event = decodeFacilityLog(network.creditContract, log as MinedLog, Number(block.timestamp) * 1000)
      return event === undefined ? [] : [facilityFact(network.slug, event)]
    })
    return { network: network.slug, txHash, blockNumber: receipt.blockNumber, facts }
  }
}

/**
 * settleJob(jobKey, offerKeys): the contract pays each advance from escrow then collateral, the rest to the borrower.
 * It takes the keys in ascending order (its duplicate check compares neighbours: linear gas in the advances).
 */
export async function sendSettleJob(clients: NetworkClients, input: { jobKey: Hex; offerKeys: readonly Hex[] }): Promise<OperatorReceipt> {
  return send(clients, { functionName: 'settleJob', args: [input.jobKey, ascendingKeys(input.offerKeys)] })
}

/** Offer keys in the ascending order of their values, as settleJob takes them. */
export function ascendingKeys(offerKeys: readonly Hex[]): Hex[] {
  return [...offerKeys].sort((a, b) => {
    const [x, y] = [BigInt(a), BigInt(b)]
    return x < y ? -1 : x > y ? 1 : 0
  })
}

/** failJob(jobKey): the client's escrow goes back at once; the collateral waits for the job's unresolved advances. */
export async function sendFailJob(clients: NetworkClients, input: { jobKey: Hex }): Promise<OperatorReceipt> {
  return send(clients, { functionName: 'failJob', args: [input.jobKey] })
}

/** liquidate(offerKey, backingCovered): the contract computes the recovery (collateral, backing, reserve, shortfall). */
export async function sendLiquidate(clients: NetworkClients, input: { offerKey: Hex; backingCoveredAtomic: bigint }): Promise<OperatorReceipt> {
  return send(clients, { functionName: 'liquidate', args: [input.offerKey, input.backingCoveredAtomic] })
}

/** Blocks asked of eth_getLogs at once when looking for an earlier operator transaction (providers cap ranges). */
export const settlementSearchBlockRange = 2_000n
/** Ranges searched at most: a bound on the work of one lookup. */
export const settlementSearchRangesMax = 500

export type EarlierOperatorTx = { eventName: 'JobSettled' | 'JobFailed' | 'Liquidated'; txHash: Hex; facts: FacilityFact[] }

/**
 * The operator transaction that already settled or failed a job or liquidated an advance, searched from the block of
 * `sinceTxHash` (the job's funding, the advance's payment) onwards, with every fact of that transaction. The contract
 * refuses a second one, so when it does the service finds the first here and records it: a crash between an operator
 * transaction and its commit is repaired by the next attempt instead of leaving the job stuck.
 */
export async function findEarlierOperatorTx(
  clients: NetworkClients,
  target: { eventName: 'JobSettled' | 'JobFailed'; jobKey: Hex } | { eventName: 'Liquidated'; offerKey: Hex },
  sinceTxHash: Hex,
): Promise<EarlierOperatorTx | undefined> {
  const { network } = clients
  // The operator's patient client: a slow range must not read as "no earlier settlement".
  const publicClient = clients.operator?.publicClient ?? clients.publicClient
  const since = await publicClient.getTransactionReceipt({ hash: sinceTxHash })
  const head = await publicClient.getBlockNumber({ cacheTime: 0 })
  const args = target.eventName === 'Liquidated' ? { offerKey: target.offerKey } : { jobKey: target.jobKey }
  let fromBlock = since.blockNumber
  for (let ranges = 0; fromBlock <= head && ranges < settlementSearchRangesMax; ranges++) {
    const toBlock = fromBlock + settlementSearchBlockRange - 1n < head ? fromBlock + settlementSearchBlockRange - 1n : head
    const [log] = await publicClient.getContractEvents({
      address: network.creditContract, abi: creditFacilityV2Abi, eventName: target.eventName, args, fromBlock, toBlock, strict: true,
    } as Parameters<typeof publicClient.getContractEvents>[0])
    if (log !== undefined) {
      const txHash = log.transactionHash as Hex
      const receipt = await publicClient.getTransactionReceipt({ hash: txHash })
      const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber })
      const facts = receipt.logs.flatMap((l) => {
        const event = decodeFacilityLog(network.creditContract, l as MinedLog, Number(block.timestamp) * 1000)
        return event === undefined ? [] : [facilityFact(network.slug, event)]
      })
      return { eventName: target.eventName, txHash, facts }
    }
    fromBlock = toBlock + 1n
  }
  return undefined
}
