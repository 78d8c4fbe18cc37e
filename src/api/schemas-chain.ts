// What an agent signs and sends: the unsigned transactions the service encodes (each on-chain step of a client, a
// borrower or a lender) and the lease authorization a paySupplier carries. The service holds no key of the sender.
import Type from 'typebox'
import { Address, AssetSymbol, Atomic, Bytes32, NetworkSlug, StrictObject } from './common.ts'

export const UnsignedTransaction = StrictObject({
  network: NetworkSlug,
  chainId: Type.Integer({ minimum: 1 }),
  from: Address,
  to: Address,
  data: Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$' }),
  value: Atomic,
  gas: Atomic,
})

/** The unsigned transactions of one on-chain step of a client or a borrower, in the order they must be mined. */
export const ChainSteps = StrictObject(
  {
    network: NetworkSlug,
    asset: AssetSymbol,
    key: { ...Bytes32, description: "The bytes32 key the contract call names: the job's jobKey, or the advance's advanceKey (catalog contracts.keys)." },
    amountAtomic: { ...Atomic, description: 'The amount the approve allows and the call moves.' },
    transactions: Type.Array(UnsignedTransaction, {
      description: 'The ERC-20 approve of exactly amountAtomic to the credit contract, then the credit contract call; each {to, data, value, chainId, gas} to sign and send from `from`, in order.',
    }),
  },
  { description: 'An on-chain step as unsigned transactions: the service holds no key of the sender; it encodes the calls with the ABIs the catalog publishes.' },
)

export const LeaseAuthorization = StrictObject(
  {
    offerKey: Bytes32,
    jobKey: { ...Bytes32, description: "The job's key, or 32 zero bytes for an advance on a backing source." },
    payer: { ...Address, description: "The leased lender's session key: the only address that may pay." },
    supplier: { ...Address, description: "The verified supplier's address: the only address the principal can go to." },
    asset: { ...Address, description: 'The token contract.' },
    amount: Atomic,
    fee: Atomic,
    reserveShare: { ...Atomic, description: "The insurance reserve's part of the fee." },
    deadline: { ...Atomic, description: "The lease's expiry, unix seconds, inclusive: paySupplier reverts after it." },
    dueAt: { ...Atomic, description: 'When the advance falls due, unix seconds.' },
  },
  { description: "The service's EIP-712 lease authorization (domain CreditFacility, version 2, the credit contract), checked by paySupplier." },
)

export const WalletAction = StrictObject(
  {
    kind: Type.Union([Type.Literal('top_up'), Type.Literal('approve'), Type.Literal('withdraw')], {
      description: 'top_up: the lender\'s main wallet sends the shortfall to the session wallet; approve: the session key approves the credit contract; withdraw: the session key sends back what no live lease or policy needs.',
    }),
    network: NetworkSlug,
    asset: AssetSymbol,
    amountAtomic: { ...Atomic, description: 'The amount transferred, or the allowance approved (2^256-1: the contract only ever pulls from the wallet that calls it).' },
    signer: Type.Union([Type.Literal('lender'), Type.Literal('session_key')], { description: 'Who signs and sends the transaction: the lender\'s main wallet, or the session key.' }),
    note: Type.String(),
    transaction: StrictObject({ ...UnsignedTransaction.properties }, { description: 'The unsigned ERC-20 transfer or approve, to sign with the signer\'s key.' }),
  },
  { description: 'An action that brings the session wallet to what the lender\'s policy needs on one network: the available liquidity plus the live leases there.' },
)
