// The chain follower's facts kept for proofs without a chain read (src/service/observed-facts.ts) are bounded by
// transactions and by facts: one transaction can hold thousands of the contract's events.
import t from 'tap'
import type { FacilityFact } from '../../src/chain/events-v2.ts'
import { OBSERVED_FACTS_MAX, OBSERVED_TRANSACTIONS_MAX, ObservedFacts } from '../../src/service/observed-facts.ts'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const factsOf = (tx: number, count: number, network = 'net-a'): FacilityFact[] =>
  Array.from({ length: count }, (_, logIndex) => ({ network, txHash: hash(tx), logIndex, name: 'CollateralPosted', args: {}, proofKey: `${network}:${hash(tx)}:${logIndex}` }) as unknown as FacilityFact)

t.test('a transaction\'s facts are kept once, by network and hash', async (t) => {
  const observed = new ObservedFacts()
  observed.record(factsOf(1, 3))
  observed.record(factsOf(1, 3))
  t.equal(observed.of('net-a', hash(1).toUpperCase().replace('0X', '0x'))?.length, 3, 'a range read again adds nothing twice; the hash in any case')
  t.equal(observed.of('net-b', hash(1)), undefined, 'another network\'s transaction of the same hash is not it')
  t.same(observed.size, { transactions: 1, facts: 3 })
})

t.test('the facts kept are bounded: the oldest transactions go first, and one larger than the bound is not kept', async (t) => {
  const observed = new ObservedFacts()
  const perTransaction = 1000
  const fits = Math.floor(OBSERVED_FACTS_MAX / perTransaction)
  for (let tx = 1; tx <= fits + 3; tx++) observed.record(factsOf(tx, perTransaction))
  t.ok(observed.size.facts <= OBSERVED_FACTS_MAX, `at most ${OBSERVED_FACTS_MAX} facts (${observed.size.facts})`)
  t.equal(observed.of('net-a', hash(1)), undefined, 'the oldest went first')
  t.equal(observed.of('net-a', hash(fits + 3))?.length, perTransaction, 'the newest is kept')
  observed.record(factsOf(99_999, OBSERVED_FACTS_MAX + 1))
  t.equal(observed.of('net-a', hash(99_999)), undefined, 'a transaction larger than the bound is not kept')
  t.ok(observed.size.facts <= OBSERVED_FACTS_MAX)

  const many = new ObservedFacts()
  for (let tx = 1; tx <= OBSERVED_TRANSACTIONS_MAX + 10; tx++) many.record(factsOf(tx, 1))
  t.same(many.size, { transactions: OBSERVED_TRANSACTIONS_MAX, facts: OBSERVED_TRANSACTIONS_MAX }, 'and by transactions')
  t.equal(many.of('net-a', hash(10)), undefined)
})
