// The JSON of the two answers of every request + match pair (issue 11): POST /credit/request's underwriting decision
// and POST /credit/match's outcome, written from the engine's own values (bench/fixtures/book.ts) by the generic
// one-pass writer (wireJson) and by the writer compiled from the response schema (serializerFor), in alternated
// rounds. Timed on process CPU per answer; the best and the median of the rounds are printed.
// Usage: node --import tsx bench/answer-json.ts [--answers 200] [--rounds 7]
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import type { TSchema } from 'typebox'
import { MatchOutcome, UnderwritingDecision } from '../src/api/schemas.ts'
import { serializerFor } from '../src/api/serializers.ts'
import { wireJson } from '../src/api/wire.ts'
import { amountsOf, ASSET, buildBook, NET, payAndRepay, SUPPLIER, T0 } from './fixtures/book.ts'

const { values: args } = parseArgs({ options: { answers: { type: 'string', default: '200' }, rounds: { type: 'string', default: '7' } } })
const ANSWERS = Number(args.answers)
const ROUNDS = Number(args.rounds)
const REPEATS = 250

const book = buildBook(2000, 16)
const decisions: unknown[] = []
const matches: unknown[] = []
const amounts = amountsOf(ANSWERS)
for (let i = 0; i < ANSWERS; i++) {
  const b = i % book.borrowers.length
  const agent = book.borrowers[b] as (typeof book.borrowers)[number]
  const amountAtomic = amounts[i] as bigint
  const requested = book.engine.requestCredit({
    agent, network: NET, asset: ASSET, productType: 'asset-backed', amountAtomic, purpose: 'bench', supplier: 'bench',
    supplierDomain: 'bench.example', supplierAddress: SUPPLIER, repaymentSource: `bench-src-${b}`, maximumFeeAtomic: amountAtomic / 20n, caller: agent,
  }, T0 + i)
  if (!requested.ok || requested.value.offer === null) throw new Error('bench request declined')
  const matched = book.engine.matchOffer({ offerId: requested.value.offer.offerId, caller: agent }, T0 + i)
  if (!matched.ok || matched.value.lease === null) throw new Error('bench offer not matched')
  decisions.push(requested.value)
  matches.push(matched.value)
  payAndRepay(book.engine, { offerId: requested.value.offer.offerId, lease: matched.value.lease, borrower: agent, amountAtomic, round: i }, T0 + i)
}

/** CPU microseconds per answer of one round: every value written REPEATS times. */
function round(values: readonly unknown[], write: (value: unknown) => string): number {
  let length = 0
  const start = process.cpuUsage()
  for (let r = 0; r < REPEATS; r++) for (const value of values) length += write(value).length
  const used = process.cpuUsage(start)
  if (length === 0) throw new Error('nothing written')
  return (used.user + used.system) / (REPEATS * values.length)
}

const cases: Array<[string, readonly unknown[], TSchema]> = [['decision', decisions, UnderwritingDecision], ['match', matches, MatchOutcome]]
const load = loadavg()[0] as number
for (const [answer, values, schema] of cases) {
  const writers: Array<[string, (value: unknown) => string]> = [['wireJson', wireJson], ['compiled', serializerFor(schema)]]
  for (const [, write] of writers) {
    if (write(values[0]) !== wireJson(values[0])) throw new Error(`${answer}: the writers differ`)
    round(values, write) // warm-up
  }
  const micros = writers.map(() => [] as number[])
  for (let k = 0; k < ROUNDS; k++) writers.forEach(([, write], w) => micros[w]?.push(round(values, write)))
  writers.forEach(([name], w) => {
    const sorted = (micros[w] as number[]).sort((a, b) => a - b)
    process.stdout.write(`${answer} ${name}: best ${sorted[0]?.toFixed(2)} median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(2)} us of CPU per answer\n`)
  })
}
process.stdout.write(`load ${load.toFixed(1)} -> ${(loadavg()[0] as number).toFixed(1)}\n`)
