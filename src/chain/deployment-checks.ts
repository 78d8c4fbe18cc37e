// The networks file against the chain it names, beyond the credit contract's version (probeCreditContract): the keys
// against the contract's roles, the tokens against their contracts. Run by the start-up (src/app/app.ts, which refuses
// the file naming /networks/i/<field>) and, for a network the start-up could not probe, by its chain follower before it
// applies anything (src/chain/follower.ts, which stops: contract_roles_mismatch, token_mismatch,
// advance_cap_below_service).
import { domainSeparator, getAddress, parseAbi, type Address, type Hex, type PublicClient } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { creditFacilityV2Abi } from './artifacts.ts'
import type { NetworkConfig } from './config.ts'
import { advanceCapMessage, contractAnswered } from './reclaim-window.ts'

/** One field of a network's entry in the networks file that the chain contradicts: `field` under /networks/i/. */
export type DeploymentMismatch = { field: string; message: string }

type ReadClient = Pick<PublicClient, 'getCode' | 'readContract'>

/**
 * The keys the networks file names against the roles the credit contract was deployed with (operator26's finding: a
 * lease signer key that is not the contract's `leaseSigner()` started healthy, and every lease it signed reverted
 * `WrongLeaseSigner` at the lender's cost; an operator key that is not `operator()` reverts every completion, failure
 * and liquidation `NotOperator`). Read at the probe's block; a network without an operator key (read-only) is not checked
 * for it. The roles are immutable: checked once, by the
 * start-up or, when it could not reach the RPC, by the network's chain follower before it applies anything.
 */
export async function contractRoleMismatches(publicClient: ReadClient, network: NetworkConfig, head: bigint): Promise<DeploymentMismatch[]> {
  const problems: DeploymentMismatch[] = []
  const read = (functionName: 'operator' | 'leaseSigner') => publicClient.readContract({ address: network.creditContract, abi: creditFacilityV2Abi, functionName, blockNumber: head })
  const [operator, leaseSigner] = await Promise.all([read('operator'), read('leaseSigner')])
  const check = (field: 'operatorKeyEnv' | 'leaseSignerKeyEnv', key: Hex | undefined, role: string, onChain: Address, consequence: string) => {
    if (key === undefined) return
    const configured = privateKeyToAddress(key)
    if (getAddress(configured) !== getAddress(onChain)) {
      problems.push({ field, message: `${network.slug}: the key in ${network[field] ?? field} is ${configured}, but the credit contract ${network.creditContract} was deployed with ${role}() ${onChain}: ${consequence}` })
    }
  }
  check('leaseSignerKeyEnv', network.leaseSignerPrivateKey, 'leaseSigner', leaseSigner, 'every lease authorization it signs would revert WrongLeaseSigner')
  check('operatorKeyEnv', network.operatorPrivateKey, 'operator', operator, 'every completion, failure and liquidation would revert NotOperator')
  return problems
}

/**
 * The credit contract's cap on a job's advances that owe (its advancesPerJobMax(), which probeCreditContract reads with
 * a current contract's verdict; undefined for another verdict) against the service's `advancesPerJobMax`: a contract
 * that takes fewer would have the service lease advances on a job that its paySupplier refuses (TooManyAdvances), each
 * lease paid by nobody. Immutable (a constructor argument): checked once, by the start-up or, when it could not reach
 * the RPC, by the network's chain follower before it applies anything (advance_cap_below_service).
 */
export function advanceCapMismatches(network: NetworkConfig, contractMax: bigint | undefined, serviceMax: number): DeploymentMismatch[] {
  if (contractMax === undefined || contractMax >= BigInt(serviceMax)) return []
  return [{ field: 'creditContract', message: advanceCapMessage(network.slug, network.creditContract, contractMax, serviceMax) }]
}

const tokenProbeAbi = parseAbi(['function decimals() view returns (uint8)', 'function DOMAIN_SEPARATOR() view returns (bytes32)'])

/**
 * Each configured token against the chain (operator26's finding: a token address that is not the token, or other
 * decimals, or an EIP-712 name or version that is not the token's, started healthy): `decimals()` must answer the
 * configured decimals (another scale would misread every amount), and where the token publishes `DOMAIN_SEPARATOR()`
 * (USDC and the devnet's stablecoin do) it must be the one of `eip712Name`, `eip712Version`, the chain and the address,
 * or every EIP-3009 authorization (x402 payments) signed by the catalog's domain is refused. A token without
 * `DOMAIN_SEPARATOR()` is not checked for its domain.
 */
export async function tokenMismatches(publicClient: ReadClient, network: NetworkConfig, head: bigint): Promise<DeploymentMismatch[]> {
  const problems: DeploymentMismatch[] = []
  await Promise.all(network.tokens.map(async (token, j) => {
    const at = `tokens/${j}`
    const code = await publicClient.getCode({ address: token.address, blockNumber: head })
    if (code === undefined || code === '0x') {
      problems.push({ field: `${at}/address`, message: `${network.slug}: no contract at ${token.symbol}'s address ${token.address}` })
      return
    }
    const [decimals, separator] = await Promise.all(
      (['decimals', 'DOMAIN_SEPARATOR'] as const).map((functionName) =>
        publicClient.readContract({ address: token.address, abi: tokenProbeAbi, functionName, blockNumber: head }).then(
          (value) => value,
          (error: unknown) => {
            // The token's own answer only (contractAnswered): a provider's -32603 internal error read "no decimals()",
            // which stops a follower for good (token_mismatch) or refuses the start, for an outage (review30).
            if (contractAnswered(error)) return undefined
            throw error
          },
        ),
      ),
    )
    if (decimals === undefined) {
      problems.push({ field: `${at}/address`, message: `${network.slug}: ${token.address} answers no decimals(): not the ${token.symbol} token` })
      return
    }
    if (Number(decimals) !== token.decimals) problems.push({ field: `${at}/decimals`, message: `${network.slug}: ${token.symbol} at ${token.address} has ${decimals} decimals, configured ${token.decimals}` })
    if (separator !== undefined) {
      const expected = domainSeparator({ domain: { name: token.eip712Name, version: token.eip712Version, chainId: network.chainId, verifyingContract: token.address } })
      if (expected !== separator) problems.push({ field: `${at}/eip712Name`, message: `${network.slug}: ${token.symbol}'s DOMAIN_SEPARATOR() is not the one of eip712Name ${JSON.stringify(token.eip712Name)}, eip712Version ${JSON.stringify(token.eip712Version)}: every EIP-3009 authorization signed by that domain would be refused; read the token's name and version (eip712Domain() or its source)` })
    }
  }))
  return problems
}

