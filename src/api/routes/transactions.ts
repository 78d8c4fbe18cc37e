// The on-chain steps of a job's client and of a borrower as unsigned transactions, as the lender's are in
// GET /lenders/{address}/actions: funding a job (approve + fundJob), posting collateral (approve + postCollateral)
// and repaying an advance (approve + repay of exactly what is owed). Public reads that change nothing: the service
// encodes the calls (src/chain/transactions-v2.ts, with the compiled ABI) and the sender signs them with its own key.
import Type from 'typebox'
import type { Address } from 'viem'
import { defineRoute, type AnyRoute } from '../../http/route.ts'
import { HttpProblem, notFound } from '../../http/problem.ts'
import { buildFundJobTransactions, buildPostCollateralTransactions, buildRepayTransactions } from '../../chain/transactions-v2.ts'
import { jobKey } from '../../chain/ids.ts'
import type { UnsignedTransaction } from '../../chain/transactions.ts'
import type { CreditService } from '../../service/credit-service.ts'
import { toWire } from '../wire.ts'
import { problemOf } from '../problems.ts'
import { Address as AddressSchema, atomicDescribed, checksum, JobId, StrictObject } from '../common.ts'
import { AdvanceId, AssetSymbol, ChainSteps, NetworkSlug } from '../schemas.ts'
import { asResult, errors, replyWith } from './shared.ts'

const tags = ['credit'] as const
const PositiveAtomic = atomicDescribed('A positive amount in the asset\'s smallest unit (decimal string).')

export const FundingQuery = StrictObject({
  network: NetworkSlug,
  asset: AssetSymbol,
  receivableAtomic: PositiveAtomic,
  agent: { ...AddressSchema, description: 'The borrower the receivable backs.' },
  client: { ...AddressSchema, description: "The job's client: the wallet that signs and sends both transactions (and the funder POST /credit/jobs checks)." },
})
export const CollateralQuery = StrictObject({ amountAtomic: PositiveAtomic })
export const RepayQuery = StrictObject({
  amountAtomic: Type.Optional(atomicDescribed('How much to repay; absent: everything still owed (lenderOwedAtomic + reserveOwedAtomic).')),
  from: Type.Optional({ ...AddressSchema, description: "Who sends the repayment (anyone may repay); absent: the advance's borrower." }),
})

function positive(value: string, name: string): bigint {
  const amount = BigInt(value)
  if (amount === 0n) throw new HttpProblem(400, 'validation_failed', `${name} must be positive`, { title: 'Bad request' })
  return amount
}

function steps(network: string, asset: string, key: string, amountAtomic: bigint, transactions: UnsignedTransaction[]) {
  return replyWith(200, ChainSteps)({ network, asset, key, amountAtomic: amountAtomic.toString(), transactions: toWire(transactions) })
}

/** A read handler whose refusals (unknown network or asset) become problem+json as a mutation's do. */
function answer(run: () => ReturnType<typeof steps>): never {
  try {
    return asResult(run())
  } catch (error) {
    throw error instanceof HttpProblem ? error : problemOf(error)
  }
}

export function transactionRoutes(service: CreditService): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/credit/jobs/{jobId}/funding-transactions',
      operationId: 'getJobFundingTransactions',
      callers: 'public',
      summary: "The job's client's unsigned approve + fundJob that escrow a receivable for a borrower",
      description:
        'Public; changes nothing. The client signs and sends both, in order, then registers the job with POST /credit/jobs (fundingTxHash: the fundJob transaction). ' +
        'key is the job\'s key on that network: the jobKey of the catalog\'s contracts.keys rule (one key per network).',
      tags,
      auth: 'none',
      params: StrictObject({ jobId: JobId }),
      query: FundingQuery,
      responses: {
        200: { description: "The token's approve of the credit contract for receivableAtomic, then the contract's fundJob for the borrower (encoded with the catalog's contracts ABIs)", schema: ChainSteps },
        400: { description: 'A query parameter fails its schema or an amount is 0 (code validation_failed), or the network or the asset is not configured (unknown_network, unknown_asset).' },
        409: { description: 'The service already knows a job with this id (code job_exists).' },
        ...errors.networkStopped,
      },
      handler: (ctx) =>
        answer(() => {
          if (service.view('job', ctx.params.jobId) !== undefined) throw new HttpProblem(409, 'job_exists', `job ${ctx.params.jobId} exists`, { title: 'Conflict' })
          const network = service.network(ctx.query.network)
          service.token(network, ctx.query.asset)
          service.refuseStoppedNetwork(network.slug)
          const amountAtomic = positive(ctx.query.receivableAtomic, 'receivableAtomic')
          const key = jobKey(network, ctx.params.jobId)
          const party = { network, contract: network.creditContract, from: checksum(ctx.query.client) as Address }
          const txs = buildFundJobTransactions(party, { jobKey: key, asset: ctx.query.asset, amountAtomic, borrower: checksum(ctx.query.agent) as Address })
          return steps(network.slug, ctx.query.asset, key, amountAtomic, txs)
        }),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/jobs/{jobId}/collateral-transactions',
      operationId: 'getCollateralTransactions',
      callers: 'public',
      summary: "The borrower's unsigned approve + postCollateral for a job",
      description:
        "Public; changes nothing. Sent from the job's borrower (the only wallet whose collateral counts for it), in order; then report the postCollateral transaction with POST /credit/jobs/{jobId}/collateral.",
      tags,
      auth: 'none',
      params: StrictObject({ jobId: JobId }),
      query: CollateralQuery,
      responses: {
        200: { description: "The job's token's approve of the credit contract for amountAtomic, then the contract's postCollateral (encoded with the catalog's contracts ABIs)", schema: ChainSteps },
        ...errors.notFound('job'),
        ...errors.networkStopped,
      },
      handler: (ctx) =>
        answer(() => {
          const job = service.view('job', ctx.params.jobId)
          if (job === undefined) throw notFound(`no job ${ctx.params.jobId}`, 'job_not_found')
          const network = service.network(job.network)
          service.refuseStoppedNetwork(network.slug)
          const amountAtomic = positive(ctx.query.amountAtomic, 'amountAtomic')
          // The key the job was funded under (a job funded under the legacy rule keeps its legacy key).
          const key = job.jobKey
          const txs = buildPostCollateralTransactions({ network, contract: network.creditContract, from: job.borrower }, { jobKey: key, asset: job.asset, amountAtomic })
          return steps(network.slug, job.asset, key, amountAtomic, txs)
        }),
    }),

    defineRoute({
      method: 'get',
      path: '/credit/advances/{advanceId}/repay-transactions',
      operationId: 'getRepayTransactions',
      callers: 'public',
      summary: 'Unsigned approve + repay of what an advance still owes (or of a given amount)',
      description:
        'Public; changes nothing. The amounts are those owed when asked (lenderOwedAtomic + reserveOwedAtomic of the advance); the contract never takes more than is owed at mining time. ' +
        'Send both in order from `from`, then report the repay transaction with POST /credit/advances/{advanceId}/repay (optional: the service counts repayments from the chain).',
      tags,
      auth: 'none',
      params: StrictObject({ advanceId: AdvanceId }),
      query: RepayQuery,
      responses: {
        200: { description: "The token's approve of the credit contract for amountAtomic, then the contract's repay of the advance (encoded with the catalog's contracts ABIs)", schema: ChainSteps },
        ...errors.notFound('advance'),
        409: { description: 'The advance owes nothing (code advance_not_open).' },
        ...errors.networkStopped,
      },
      handler: (ctx) =>
        answer(() => {
          const advance = service.view('advance', ctx.params.advanceId)
          if (advance === undefined) throw notFound(`no advance ${ctx.params.advanceId}`, 'advance_not_found')
          const owedAtomic = advance.lenderOwedAtomic + advance.reserveOwedAtomic
          if (owedAtomic === 0n) throw new HttpProblem(409, 'advance_not_open', `advance ${advance.advanceId} owes nothing`, { title: 'Conflict' })
          const amountAtomic = ctx.query.amountAtomic === undefined ? owedAtomic : positive(ctx.query.amountAtomic, 'amountAtomic')
          const network = service.network(advance.network)
          service.refuseStoppedNetwork(network.slug)
          const from = ctx.query.from === undefined ? advance.borrower : (checksum(ctx.query.from) as Address)
          const txs = buildRepayTransactions({ network, contract: network.creditContract, from }, { offerKey: advance.advanceKey, asset: advance.asset, amountOwedAtomic: amountAtomic })
          return steps(network.slug, advance.asset, advance.advanceKey, amountAtomic, txs)
        }),
    }),
  ]
}
