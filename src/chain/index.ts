// The chain part of the service: network configuration, devnet, contracts, proofs, session keys, watcher, and the v2
// pieces the integration switches to (lease authorizations, salted keys, the chain follower).
export { startAnvil, anvilBinaryPath, AnvilStartError, type AnvilOptions, type AnvilProcess } from './anvil.ts'
export {
  creditFacilityAbi,
  creditFacilityV2Abi,
  identityRegistryAbi,
  loadArtifact,
  multicall3Abi,
  multicall3Address,
  reputationRegistryAbi,
  testStablecoinAbi,
  type Artifact,
  type ContractName,
} from './artifacts.ts'
export {
  createChainClients,
  createNetworkClients,
  networkChain,
  operatorRpcRetryCount,
  operatorRpcTimeoutMs,
  rpcTimeoutMsDefault,
  type ClientOptions,
  type NetworkClients,
  type OperatorWallet,
} from './clients.ts'
export {
  findNetwork,
  findToken,
  loadNetworksConfig,
  NetworksConfigError,
  NetworksFileSchema,
  parseNetworksConfig,
  toNetworksFile,
  UnknownAssetError,
  UnknownNetworkError,
  type ConfigProblem,
  type NetworkConfig,
  type NetworksFile,
  type TokenConfig,
} from './config.ts'
export {
  defaultDevnetNetworks,
  demoAccounts,
  deployCreditFacilityV2,
  demoRoles,
  devMnemonic,
  devnetToken,
  startDevnet,
  type DemoAccount,
  type DemoAccounts,
  type DemoRole,
  type Devnet,
  type DevnetNetworkSpec,
  type DevnetOptions,
} from './devnet.ts'
export {
  ChainFollower,
  chainTimeIntervalMsDefault,
  FollowerFatalError,
  logBlockRangeMaxDefault,
  type ChainBatch,
  type FollowedEvent,
  type FollowedEventName,
  type FollowerCursor,
  type FollowerEvents,
  type FollowerFatalCode,
  type FollowerOptions,
  type FollowerState,
} from './follower.ts'
export { followerCursorCollection, FollowerCursors } from './follower-cursor.ts'
export { decodeFacilityLog, facilityFact, type FacilityEvent, type FacilityEventName, type FacilityFact, type MinedLog } from './events-v2.ts'
export {
  readFacilityReceipt,
  verifyFacilityEvent,
  type FacilityFactOf,
  type FacilityProofFailure,
  type FacilityProofResult,
  type FacilityReceipt,
} from './proofs-v2.ts'
export {
  buildFundJobTransactions,
  buildPaySupplierV2Transaction,
  buildPostCollateralTransactions,
  buildRepayTransactions,
  buildSessionSetupTransaction,
  buildTopUpTransaction,
  buildWithdrawalTransaction,
  gasLimitsV2,
} from './transactions-v2.ts'
export { FacilityModel, type FacilityModelState, type ModelAdvance, type ModelContext, type ModelEvent, type ModelJob, type ModelLease, type ModelOutcome, type ModelSignature } from './facility-model.ts'
export { idKey, isKeySalt, jobKey, KeySaltError, keySaltBytes, newKeySalt, offerKey } from './ids.ts'
export { ensureKeySalt, keySaltCollection } from './key-salt.ts'
export {
  leaseAuthorizationTypes,
  leaseAuthorizationTypeString,
  LeaseAuthorizationError,
  leaseDigestBytes,
  leaseDomain,
  leaseDomainName,
  leaseDomainVersion,
  LeaseSigner,
  leaseStructHash,
  nativeStatus,
  type LeaseAuthorization,
  type LeaseDomain,
  type LeaseSignerOptions,
  type NativeImplementation,
} from './lease-authorization.ts'
export {
  ContractRevertError,
  OperatorUnavailableError,
  findEarlierOperatorTx,
  sendFailJob,
  sendLiquidate,
  sendSettleJob,
  toContractRevert,
  type EarlierOperatorTx,
  type OperatorReceipt,
} from './operator.ts'
export { ChainRpcError, ProofRefusedError, readSuccessfulReceipt, type ProofFailureReason } from './proofs.ts'
export {
  approveGasHint,
  buildApproveTransaction,
  type UnsignedTransaction,
} from './transactions.ts'
export { LmdbUsedProofs, proofKey, type UsedProofs } from './used-proofs.ts'
export {
  WalletWatcher,
  watchedHoldersMax,
  WatchLimitError,
  type Holding,
  type WalletView,
  type WatcherEvents,
  type WatcherOptions,
} from './watcher.ts'
