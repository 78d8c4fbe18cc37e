// The score process of LocalScoreCompute: computes one score per message and answers with its JWE only. The
// plaintext score lives here for the length of one call. Ends when its parent goes away.
import { creditScore } from './formula.ts'
import type { ChildAnswer, ChildRequest } from './local-compute.ts'
import { sealScore } from './seal.ts'

function answer(message: ChildAnswer): void {
  process.send?.(message)
}

process.on('message', (request: ChildRequest) => {
  void (async () => {
    try {
      const jwe = await sealScore(creditScore(request.inputs), request.recipient)
      answer({ id: request.id, ok: true, jwe })
    } catch (error) {
      answer({ id: request.id, ok: false, message: `the score could not be computed: ${(error as Error).message}` })
    }
  })()
})
process.on('disconnect', () => process.exit(0))
