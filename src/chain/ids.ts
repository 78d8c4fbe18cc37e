import { keccak256, stringToBytes, type Hex } from 'viem'

/** The bytes32 key of a service id on chain: keccak256 of its UTF-8 bytes (jobs, offers, advances). */
export function idKey(id: string): Hex {
  return keccak256(stringToBytes(id))
}
