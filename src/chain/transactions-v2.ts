// Unsigned transactions for CreditFacilityV2 that the service hands out (the sender signs; the service holds no client
// key): a job's funding, collateral and repayment (each an approve of exactly the amount, then the call), a lease's
// paySupplier under its authorization, and the lender's session wallet: setup (approve the maximum, because repayments
// recycle capital into this wallet and each payment would otherwise use up a fixed allowance, issue 9 case 6), top-up
// (transfer from the lender's main wallet) and withdrawal (transfer back to it).
import { encodeFunctionData, erc20Abi, getAddress, maxUint256, type Address, type Hex } from 'viem'
import { creditFacilityV2Abi } from './artifacts.ts'
import { findToken, type NetworkConfig } from './config.ts'
import type { LeaseAuthorization } from './lease-authorization.ts'
import type { UnsignedTransaction } from './transactions.ts'

/**
 * Gas limits to sign with: about 1.3x what each call used on anvil with cold storage (measured: fundJob 167k,
 * postCollateral 72k, paySupplier 279k, repay 91k, approve 46k, transfer 51k; test/chain/transactions-v2.test.ts
 * measures every one and fails if it reaches its limit; claimHeld 53k, test/api/held-views.test.ts; paySupplier to a
 * supplier the token refuses, its principal held, 332k, test/chain/held-payments.test.ts), with headroom for tokens that
 * cost more than the devnet's.
 */
export const gasLimitsV2 = {
  approve: 80_000n,
  transfer: 80_000n,
  fundJob: 240_000n,
  postCollateral: 120_000n,
  paySupplier: 440_000n,
  repay: 160_000n,
  claimHeld: 100_000n,
} as const

/** Who sends to which contract on which network (only the network's slug, chain id and tokens are read). */
export type Party = { network: Pick<NetworkConfig, 'slug' | 'chainId' | 'tokens'>; contract: Address; from: Address }

function tx(p: Party, to: Address, data: Hex, gas: bigint): UnsignedTransaction {
  return { network: p.network.slug, chainId: p.network.chainId, from: getAddress(p.from), to: getAddress(to), data, value: 0n, gas }
}

function approve(p: Party, asset: Address, amountAtomic: bigint): UnsignedTransaction {
  return tx(p, asset, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [getAddress(p.contract), amountAtomic] }), gasLimitsV2.approve)
}

function facilityCall(p: Party, data: Hex, gas: bigint): UnsignedTransaction {
  return tx(p, p.contract, data, gas)
}

/** The client's approve + fundJob(jobKey, asset, amount, borrower). */
export function buildFundJobTransactions(p: Party, input: { jobKey: Hex; asset: string; amountAtomic: bigint; borrower: Address }): UnsignedTransaction[] {
  const token = findToken(p.network, input.asset).address
  return [
    approve(p, token, input.amountAtomic),
    facilityCall(p, encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'fundJob', args: [input.jobKey, token, input.amountAtomic, getAddress(input.borrower)] }), gasLimitsV2.fundJob),
  ]
}

/** The borrower's approve + postCollateral(jobKey, asset, amount). */
export function buildPostCollateralTransactions(p: Party, input: { jobKey: Hex; asset: string; amountAtomic: bigint }): UnsignedTransaction[] {
  const token = findToken(p.network, input.asset).address
  return [
    approve(p, token, input.amountAtomic),
    facilityCall(p, encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'postCollateral', args: [input.jobKey, token, input.amountAtomic] }), gasLimitsV2.postCollateral),
  ]
}

/** Anyone's approve + repay(offerKey, amount); the amount is what is owed now (the contract pulls at most that). */
export function buildRepayTransactions(p: Party, input: { offerKey: Hex; asset: string; amountOwedAtomic: bigint }): UnsignedTransaction[] {
  const token = findToken(p.network, input.asset).address
  return [
    approve(p, token, input.amountOwedAtomic),
    facilityCall(p, encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'repay', args: [input.offerKey, input.amountOwedAtomic] }), gasLimitsV2.repay),
  ]
}

/** The session wallet's paySupplier(authorization, signature): from is the authorization's payer, the only sender it allows. */
export function buildPaySupplierV2Transaction(
  p: Omit<Party, 'from'>,
  input: { authorization: LeaseAuthorization; signature: Hex },
): UnsignedTransaction {
  return facilityCall(
    { ...p, from: input.authorization.payer },
    encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'paySupplier', args: [input.authorization, input.signature] }),
    gasLimitsV2.paySupplier,
  )
}

/** The session wallet's setup: approve the maximum to the contract, once (see the file's comment for why the maximum). */
export function buildSessionSetupTransaction(p: Party, input: { asset: string }): UnsignedTransaction {
  return approve(p, findToken(p.network, input.asset).address, maxUint256)
}

function transfer(p: Party, asset: string, to: Address, amountAtomic: bigint): UnsignedTransaction {
  const token = findToken(p.network, asset).address
  return tx(p, token, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [getAddress(to), amountAtomic] }), gasLimitsV2.transfer)
}

/** The lender's main wallet tops up its session wallet. */
export function buildTopUpTransaction(p: Party, input: { asset: string; sessionWallet: Address; amountAtomic: bigint }): UnsignedTransaction {
  return transfer(p, input.asset, input.sessionWallet, input.amountAtomic)
}

/** The session wallet returns capital no live lease needs to the lender's main wallet. */
export function buildWithdrawalTransaction(p: Party, input: { asset: string; mainWallet: Address; amountAtomic: bigint }): UnsignedTransaction {
  return transfer(p, input.asset, input.mainWallet, input.amountAtomic)
}

/**
 * claimHeld(token, account): pays `account` all the contract holds for it, once the token accepts it (until then the
 * call reverts and changes nothing). Anyone may send it; `from` is the account itself, whose payment it is.
 */
export function buildClaimHeldTransaction(p: Omit<Party, 'from'>, input: { token: Address; account: Address }): UnsignedTransaction {
  const data = encodeFunctionData({ abi: creditFacilityV2Abi, functionName: 'claimHeld', args: [getAddress(input.token), getAddress(input.account)] })
  return facilityCall({ ...p, from: input.account }, data, gasLimitsV2.claimHeld)
}
