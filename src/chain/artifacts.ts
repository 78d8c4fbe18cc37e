// The compiled contracts (src/chain/contracts/build, written by `npm run build:contracts`). The ABIs come typed from
// the generated abi.ts; the bytecode is read from the JSON artifacts when a deployment needs it.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Abi, Hex } from 'viem'

export {
  creditFacilityV2Abi,
  identityRegistryAbi,
  multicall3Abi,
  reputationRegistryAbi,
  testStablecoinAbi,
} from './contracts/build/abi.ts'

export type ContractName = 'CreditFacilityV2' | 'TestStablecoin' | 'Multicall3' | 'IdentityRegistry' | 'ReputationRegistry'

export type Artifact = { contractName: ContractName; abi: Abi; bytecode: Hex; deployedBytecode: Hex }

const buildDir = join(dirname(fileURLToPath(import.meta.url)), 'contracts', 'build')
const cache = new Map<ContractName, Artifact>()

export function loadArtifact(name: ContractName): Artifact {
  const cached = cache.get(name)
  if (cached !== undefined) return cached
  const artifact = JSON.parse(readFileSync(join(buildDir, `${name}.json`), 'utf8')) as Artifact
  cache.set(name, artifact)
  return artifact
}

/** The address where every EVM chain of note has Multicall3; the devnet writes its runtime code there. */
export const multicall3Address = '0xcA11bde05977b3631167028862bE2a173976CA11' as const
