// The lender's capital between its main wallet and its session wallet (issue 9, case 6). On each network the session
// wallet should hold what the lender's policy may lend (its available liquidity) plus the principal of its live leases
// there (promised to suppliers), and allow the credit contract to pull it. Below that, the service publishes the
// top-up (a transfer from the lender's main wallet) and, when the allowance is short, the session key's approve;
// above it (after a withdrawal, or when repayments came back for capital the lender withdrew), the session key's
// transfer back to the main wallet. Computed from the watcher's last reading of the wallet: none before the first, and
// none while a payment or repayment the engine applied is newer than that reading (the watcher re-reads it at once).
import { maxUint256, type Address } from 'viem'
import type { NetworkConfig } from '../chain/config.ts'
import { buildApproveTransaction, buildTransferTransaction, type UnsignedTransaction } from '../chain/transactions.ts'
import type { Holding } from '../chain/watcher.ts'

export interface WalletAction {
  kind: 'top_up' | 'approve' | 'withdraw'
  network: string
  asset: string
  amountAtomic: bigint
  signer: 'lender' | 'session_key'
  note: string
  transaction: UnsignedTransaction
}

export interface WalletNeed {
  lender: Address
  sessionAddress: Address
  network: NetworkConfig
  asset: string
  /** The policy's available liquidity (the lender record's, not the wallet-bounded view's). */
  policyAvailableAtomic: bigint
  /** Principal of the lender's live leases on this network and asset. */
  reservedAtomic: bigint
  holding: Holding | undefined
}

/** What brings the session wallet of one network to the policy: top-up and approve, or the transfer back; or nothing. */
export function walletActions(need: WalletNeed): WalletAction[] {
  const { holding, network, asset } = need
  if (holding === undefined) return []
  const targetAtomic = need.policyAvailableAtomic + need.reservedAtomic
  const actions: WalletAction[] = []
  const common = { network: network.slug, asset }
  if (holding.balanceAtomic < targetAtomic) {
    const amountAtomic = targetAtomic - holding.balanceAtomic
    actions.push({
      ...common, kind: 'top_up', amountAtomic, signer: 'lender',
      note: `Send ${amountAtomic} from your wallet to the session wallet: it then holds your available liquidity plus your live leases on ${network.slug}.`,
      transaction: buildTransferTransaction(network, { from: need.lender, to: need.sessionAddress, asset, amountAtomic }),
    })
  }
  // paySupplier spends allowance (unless unlimited): once below what the wallet must pay, only an approve restores it.
  // Unlimited is safe: the contract pulls from the session wallet only in a paySupplier or repay the key itself sends.
  if (holding.allowanceAtomic < targetAtomic) {
    actions.push({
      ...common, kind: 'approve', amountAtomic: maxUint256, signer: 'session_key',
      note: `Sign with the session key: the credit contract's allowance (${holding.allowanceAtomic}) is below what the session wallet must be able to pay (${targetAtomic}).`,
      transaction: buildApproveTransaction(network, { owner: need.sessionAddress, asset, amountAtomic: maxUint256 }),
    })
  }
  if (holding.balanceAtomic > targetAtomic) {
    const amountAtomic = holding.balanceAtomic - targetAtomic
    actions.push({
      ...common, kind: 'withdraw', amountAtomic, signer: 'session_key',
      note: `Sign with the session key: sends back to your wallet the ${amountAtomic} that neither your available liquidity nor a live lease on ${network.slug} needs.`,
      transaction: buildTransferTransaction(network, { from: need.sessionAddress, to: need.lender, asset, amountAtomic }),
    })
  }
  return actions
}
