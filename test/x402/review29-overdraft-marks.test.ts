// review29: the in-flight mark of a payment (outsider19, outsider26) lives UNDELIVERED_RETRY_SECONDS past the
// authorization's validBefore, which the payer chooses. A payer holding one price that sends several payments at once
// has each verified alone; the facilitator settles them in turn and refuses the overdrafts unsent
// (test/x402/outsider4-overdraft.test.ts), but each one's mark stayed in the store for its whole life, read back at
// every start and walked at every front-run lookup: marks at the cost of a computation each, none of which any
// settlement can ever buy. Now a settle the facilitator refused with nothing sent (no transaction, not pending)
// deletes the mark its own attempt wrote. Fails without the fix: the refused payments' marks are still stored.
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { DEVNET_PRICE_ATOMIC } from '../../src/score/settings.ts'
import { SETTLEMENTS_IN_FLIGHT_COLLECTION } from '../../src/x402/front-run.ts'
import { fund } from '../fixtures/service.ts'
import { proxiedScoreService } from './fixtures/proxied-score.ts'
import { creditScoreBody, creditScoreSignature } from './fixtures/score-payment.ts'
import { postScore } from '../api/fixtures/undelivered-score.ts'

const AT_ONCE = 3

t.test('payments refused unsent at settle leave no in-flight mark', async (t) => {
  const { h, b } = await proxiedScoreService(t)
  const payerKey = generatePrivateKey()
  await fund(h.devnet, b, privateKeyToAccount(payerKey).address, DEVNET_PRICE_ATOMIC)
  const calls = []
  for (let i = 0; i < AT_ONCE; i++) {
    const body = await creditScoreBody(h, `r29-overdraft-${i}`)
    calls.push({ body, header: await creditScoreSignature(h, b as NetworkConfig, body, payerKey) })
  }
  const replies = await Promise.all(calls.map(({ body, header }) => postScore(h.url, body, header)))
  const statuses = replies.map((r) => `${r.status} ${r.body.code ?? ''}`.trim())
  t.equal(statuses.filter((s) => s === '200').length, 1, `one score for one price: ${statuses.join(', ')}`)
  t.equal(statuses.filter((s) => s === '402 payment_settlement_failed').length, AT_ONCE - 1, 'the overdrafts refused at settle')
  const marks = [...h.app.service.store.collection(SETTLEMENTS_IN_FLIGHT_COLLECTION).iterate()]
  t.same(marks, [], 'no mark left for a settlement that was never sent')
})
