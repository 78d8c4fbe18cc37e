// The catalog's `contracts` entry: the credit contract's ABI exactly as compiled, the token ABI the flow uses, and the
// rule that turns the service's ids into the contract's bytes32 keys. Written once here; llms.txt and the OpenAPI
// descriptions point to it instead of restating signatures that could then disagree (issue 14).
import Type, { type Static } from 'typebox'
import { erc20Abi } from 'viem'
import { creditFacilityV2Abi } from '../chain/artifacts.ts'
import { jobKey, legacyJobKey, type JobKeyDomain } from '../chain/ids.ts'
import { StrictObject } from './common.ts'

/** One ABI item (function, event, error, constructor) as solc writes it. */
const AbiItem = Type.Object({ type: Type.String() }, { additionalProperties: true })

/** The catalog's jobId-to-key rule (src/chain/ids.ts jobKey and legacyJobKey). */
export const JOB_KEY_RULE =
  'jobKey = keccak256(abi.encodePacked(uint256 chainId, address creditContract, bytes jobId)) on each network: its chainId as 32 bytes (big-endian), its creditContract\'s 20 bytes, then the UTF-8 bytes of the jobId string, hashed ' +
  '(viem: keccak256(encodePacked([\'uint256\', \'address\', \'string\'], [BigInt(chainId), creditContract, jobId])), with networks[].chainId and networks[].creditContract of the job\'s network). ' +
  'fundJob, postCollateral, settleJob, failJob, reclaimJob and the lease authorization name the job by it; the SDK (ChainAgent.fundJob) and GET /credit/jobs/{jobId}/funding-transactions produce it. ' +
  'A job\'s key on one network says nothing of its key on another, so nobody who reads it in a fundJob\'s calldata can fund the same id first on another network (a job id belongs to its earliest funding on any network: 409 job_id_funded_elsewhere). ' +
  'The legacy rule, keccak256(utf8(jobId)) (the same key on every network), is still accepted at registration, for fundings made before 2026-11-28, but a job funded under it stays exposed to that squat: its key in the calldata is its key everywhere. ' +
  'A registered job\'s key is its jobKey (GET /credit/jobs/{jobId}).'

/** The job id the catalog's key example is computed for. */
export const KEY_EXAMPLE_JOB_ID = 'job_1'

export const CatalogContracts = StrictObject(
  {
    creditFacility: StrictObject(
      {
        name: Type.Literal('CreditFacilityV2'),
        abi: Type.Array(AbiItem, { description: 'The compiled ABI: every function, event and error, at each network\'s creditContract.' }),
      },
      { description: 'The credit contract (networks[].creditContract).' },
    ),
    token: StrictObject(
      {
        standard: Type.Literal('ERC-20'),
        abi: Type.Array(AbiItem, { description: 'The ERC-20 functions and events the flow uses, at each networks[].assets[].address.' }),
      },
      { description: 'The assets (networks[].assets).' },
    ),
    keys: StrictObject(
      {
        jobKey: Type.String({ description: 'How a jobId becomes the bytes32 the contract names a job by on a network (its key differs on each network).' }),
        jobKeyExample: StrictObject(
          {
            jobId: Type.String(),
            network: Type.String(),
            chainId: Type.Integer({ minimum: 1 }),
            creditContract: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
            jobKey: Type.String({ pattern: '^0x[0-9a-f]{64}$' }),
            legacyJobKey: Type.String({ pattern: '^0x[0-9a-f]{64}$', description: 'The same id\'s key under the legacy rule (named in jobKey), for comparison: do not fund under it.' }),
          },
          { description: 'The rule applied to jobId on the first of networks[].' },
        ),
        advanceKey: Type.String({ description: 'Where an offer\'s and its advance\'s bytes32 key is read (it cannot be computed).' }),
      },
      { description: 'The id-to-bytes32 rule.' },
    ),
    approvals: Type.String({ description: 'Which calls pull tokens, and the approve each needs first.' }),
    heldPayments: Type.String({ description: 'What happens to a payment the token refuses to deliver (a blacklisted recipient), and how it is claimed.' }),
    advancesPerJobMax: Type.Integer({
      minimum: 1,
      description: 'The credit contract\'s cap on a job\'s advances that still owe (its advancesPerJobMax(), a constructor argument; paySupplier reverts TooManyAdvances past it), so that one settleJob pays them all. This is the service\'s own limits.advancesPerJobMax: the embedded devnet deploys its contract with exactly it, and the service refuses to start on a configured contract whose cap is below it (the contract\'s own may be higher; read advancesPerJobMax() for it).',
    }),
    unsignedTransactions: Type.Array(
      StrictObject({ step: Type.String(), signer: Type.String(), route: Type.String() }),
      { description: 'Where the service hands out each on-chain step as unsigned transactions {to, data, value, chainId, gas}.' },
    ),
  },
  { description: 'The contracts an agent calls, their ABIs and the id-to-bytes32 rule: the one place the interface states them.' },
)
export type CatalogContracts = Static<typeof CatalogContracts>

/** `example`: the network the key example is computed for (the catalog's first). */
export function contractsCatalogEntry(advancesPerJobMax: number, example: JobKeyDomain & { slug: string }): CatalogContracts {
  return {
    creditFacility: { name: 'CreditFacilityV2', abi: structuredClone(creditFacilityV2Abi) as unknown as CatalogContracts['creditFacility']['abi'] },
    token: { standard: 'ERC-20', abi: structuredClone(erc20Abi) as unknown as CatalogContracts['token']['abi'] },
    keys: {
      jobKey: JOB_KEY_RULE,
      jobKeyExample: {
        jobId: KEY_EXAMPLE_JOB_ID, network: example.slug, chainId: example.chainId, creditContract: example.creditContract,
        jobKey: jobKey(example, KEY_EXAMPLE_JOB_ID), legacyJobKey: legacyJobKey(KEY_EXAMPLE_JOB_ID),
      },
      advanceKey:
        'Salted by the service with a secret, so nobody can compute a future offer\'s key: read it as offerKey of GET /credit/offers/{offerId} or advanceKey of GET /credit/advances/{advanceId}. ' +
        'repay(advanceKey, amount) and paySupplier\'s authorization.offerKey name the advance by it.',
    },
    approvals:
      'fundJob, postCollateral, repay and paySupplier pull the asset from their sender with transferFrom: the sender first approves the credit contract for at least the amount on the asset\'s token. ' +
      'Each unsigned step below includes that approve (exactly the amount). The lender\'s session wallet approves its registered liquidity in its setup, and each paySupplier spends that allowance, which a repayment does not restore: ' +
      'once it is short, GET /lenders/{address}/actions lists an approve without limit (2^256-1) for the session key, and until it is sent the lender\'s availableAtomic counts only the allowance left. ' +
      'reclaimJob(jobKey) pulls nothing: the job\'s client or its borrower calls it directly (the escrow goes back to the client and the collateral to the borrower, whoever calls it; a deployment whose BORROWER_MAY_RECLAIM() answers true takes the borrower\'s, one from before 2026-11-28 has no such function, its call reverts without data, and takes the client\'s only: networks[].borrowerMayReclaim says which), from getJob(jobKey).fundedAt + reclaimDelay() on, on a job still open none of whose advances owes anything (getJob(jobKey).outstanding 0; AdvancesOwed otherwise).',
    heldPayments:
      'A transfer the token refuses (USDC\'s blacklist, a paused token) never reverts the contract\'s settleJob, failJob, liquidate, reclaimJob, repay or paySupplier: the amount is held for its recipient (event PaymentHeld(asset, to, amount); heldFor(asset, account) reads it; GET /credit/held-payments/{address} lists it with the claim to send) and the call goes on for everyone else. ' +
      'In paySupplier the lender\'s principal comes into the contract, held for the supplier, and the advance is born and owed as any other (a payer the token refuses is refused, nothing moves). ' +
      'claimHeld(asset, account), sent by anyone, pays all of it to that account only (HeldPaymentClaimed), once the token accepts it; until then it reverts and nothing changes. The advance counts as settled or repaid either way.',
    advancesPerJobMax,
    unsignedTransactions: [
      { step: 'fund a job: approve + fundJob', signer: "the job's client", route: 'GET /credit/jobs/{jobId}/funding-transactions' },
      { step: 'post collateral: approve + postCollateral', signer: "the job's borrower", route: 'GET /credit/jobs/{jobId}/collateral-transactions' },
      { step: 'repay an advance: approve + repay of what is owed', signer: 'anyone (default: the borrower)', route: 'GET /credit/advances/{advanceId}/repay-transactions' },
      { step: "session wallet setup: approve", signer: "the lender's session key", route: 'POST /lenders/register (setupTransactions)' },
      { step: 'pay the supplier: paySupplier', signer: "the lender's session key", route: 'GET /lenders/{address}/actions (pay_supplier), and the lease event of GET /events' },
      { step: 'top up, re-approve or withdraw the session wallet', signer: "the lender's wallet or session key", route: 'GET /lenders/{address}/actions (top_up, approve, withdraw)' },
    ],
  }
}
