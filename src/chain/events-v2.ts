// CreditFacilityV2's events as the service reads them: ONE decoding of a raw log, used by the chain follower (logs of a
// block range) and by the report routes' proofs (logs of one receipt, src/chain/proofs-v2.ts), so that a fact reached
// both ways is the same fact with the same proof key (network:txHash:logIndex), and the engine counts it once.
import { decodeEventLog, getAddress, type Address, type ContractEventArgsFromTopics, type ContractEventName, type Hex, type Log } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'

export type FacilityEventName = ContractEventName<typeof creditFacilityV2Abi>

/** One decoded event of the credit contract, with where and when it happened. */
export type FacilityEvent = {
  [E in FacilityEventName]: {
    name: E
    args: ContractEventArgsFromTopics<typeof creditFacilityV2Abi, E, true>
    txHash: Hex
    logIndex: number
    blockNumber: bigint
    blockTimeMs: number
  }
}[FacilityEventName]

/** An event as a fact for the engine: the event and the key that makes applying it idempotent. */
export type FacilityFact = FacilityEvent & { network: string; proofKey: string }

/** A mined log (block, transaction and index known), as both eth_getLogs and a receipt return it. */
export type MinedLog = Pick<Log<bigint, number, false>, 'address' | 'topics' | 'data'> & {
  blockNumber: bigint
  transactionHash: Hex
  logIndex: number
}

/**
 * The contract's event in `log`, or undefined when the log is not from `contract` or is not one of its events (an
 * ERC-20 Transfer of the same transaction, another contract's event with the same signature). Addresses come back
 * checksummed, so that facts compare equal whichever path they came by.
 */
export function decodeFacilityLog(contract: Address, log: MinedLog, blockTimeMs: number): FacilityEvent | undefined {
  if (getAddress(log.address) !== getAddress(contract)) return undefined
  let decoded
  try {
    decoded = decodeEventLog({ abi: creditFacilityV2Abi, topics: log.topics as [Hex, ...Hex[]], data: log.data, strict: true })
  } catch {
    return undefined
  }
  const args: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(decoded.args as Record<string, unknown>)) {
    args[name] = typeof value === 'string' && value.length === 42 ? getAddress(value) : value
  }
  return {
    name: decoded.eventName,
    args,
    txHash: log.transactionHash.toLowerCase() as Hex,
    logIndex: log.logIndex,
    blockNumber: log.blockNumber,
    blockTimeMs,
  } as FacilityEvent
}

export function facilityFact(network: string, event: FacilityEvent): FacilityFact {
  return { ...event, network, proofKey: proofKey(network, event.txHash, event.logIndex) }
}

/** The key of a fact, `${network}:${txHash}:${logIndex}`: a fact is applied once by this key, however it arrives. */
export function proofKey(network: string, txHash: string, logIndex: number): string {
  return `${network}:${txHash.toLowerCase()}:${logIndex}`
}
