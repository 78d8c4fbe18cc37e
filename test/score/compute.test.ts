// The local compute component: a child process that computes and seals a score. The caller decrypts it with its
// private key and finds exactly what the formula gives; the parent's environment never reaches the child; a call
// that cannot be computed, or whose child dies, fails with ComputeFailedError; the next call starts a new child.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { compactDecrypt, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose'
import { ComputeFailedError } from '../../src/score/compute.ts'
import { creditScore, type CreditScoreInputs } from '../../src/score/formula.ts'
import { LocalScoreCompute } from '../../src/score/local-compute.ts'
import type { RecipientKey } from '../../src/score/recipient-key.ts'
import { toWire } from '../../src/api/wire.ts'

const SECRET_NAME = 'AGENT_CREDIT_TEST_SECRET'
process.env[SECRET_NAME] = 'operator-key-that-must-not-leak'

const inputs: CreditScoreInputs = {
  subject: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  asOfMs: Date.UTC(2026, 10, 1),
  repaidAdvances: 3,
  scoredRepayments: [{ advanceId: 'adv_1', network: 'devnet-b', asset: 'USDC', principalAtomic: 250_000_000n }],
  repaymentMinimums: [{ network: 'devnet-b', asset: 'USDC', minPrincipalAtomic: 100_000_000n }],
  partialRepayments: 0,
  defaultedAdvances: 1,
  shortfallAtomic: 0n,
  suspended: false,
  openAdvances: 1,
  pastDueAdvances: 0,
  outstanding: [{ network: 'devnet-b', asset: 'USDC', outstandingAtomic: 1_050_000n }],
  historyStartedAtMs: Date.UTC(2026, 4, 1),
  erc8004: null,
}

const compute = new LocalScoreCompute({ callTimeoutMs: 30_000 })
t.teardown(() => compute.close())

async function recipient(crv: 'P-256' | 'X25519' = 'P-256', kid?: string) {
  const { publicKey, privateKey } = await generateKeyPair('ECDH-ES', { crv, extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), ...(kid === undefined ? {} : { kid }) } as RecipientKey
  return { jwk, privateKey }
}

t.test('the answer is a compact JWE (ECDH-ES, A256GCM) that only the caller\'s private key opens, holding the formula\'s score', async (t) => {
  for (const crv of ['P-256', 'X25519'] as const) {
    const { jwk, privateKey } = await recipient(crv, `key-${crv}`)
    const sealed = await compute.score({ inputs, recipient: jwk })
    t.equal(sealed.attestation, undefined, 'the local component attests nothing')
    t.equal(sealed.jwe.split('.').length, 5, 'compact serialization')
    t.match(decodeProtectedHeader(sealed.jwe), { alg: 'ECDH-ES', enc: 'A256GCM', cty: 'application/json', kid: `key-${crv}` })
    const { plaintext } = await compactDecrypt(sealed.jwe, privateKey)
    const opened = JSON.parse(new TextDecoder().decode(plaintext))
    t.strictSame(opened, JSON.parse(JSON.stringify(toWire(creditScore(inputs)))), `${crv}: the plaintext is the formula's score in wire form`)
    t.equal(opened.inputs.outstanding[0].outstandingAtomic, '1050000', 'amounts as decimal strings')
    const other = await recipient(crv)
    await t.rejects(compactDecrypt(sealed.jwe, other.privateKey), `${crv}: another private key cannot open it`)
  }
})

t.test('the child process holds none of the parent\'s environment', async (t) => {
  await compute.score({ inputs, recipient: (await recipient()).jwk })
  const pid = compute.pid
  t.ok(pid, 'a child is running')
  const environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
  t.notOk(environ.includes(SECRET_NAME), 'the secret variable is not in the child')
  t.notOk(environ.includes('must-not-leak'))
})

t.test('inputs that cannot be scored fail the call with ComputeFailedError; the child keeps serving', async (t) => {
  const { jwk } = await recipient()
  await t.rejects(compute.score({ inputs: { ...inputs, pastDueAdvances: 2 }, recipient: jwk }), ComputeFailedError)
  const pid = compute.pid
  await compute.score({ inputs, recipient: jwk })
  t.equal(compute.pid, pid, 'the same child answered the next call')
})

t.test('a child that dies during a call fails it; the next call starts a new child', async (t) => {
  const { jwk } = await recipient()
  await compute.score({ inputs, recipient: jwk })
  const pid = compute.pid as number
  const call = compute.score({ inputs, recipient: jwk })
  process.kill(pid, 'SIGKILL')
  // The call may have been answered before the signal landed; either way no answer is invented.
  const outcome = await call.then(() => 'answered', (error: unknown) => error)
  if (outcome !== 'answered') t.type(outcome, ComputeFailedError, 'the call in flight fails')
  // Until the parent saw the child exit (a call answered before the signal landed leaves that to the exit event, which
  // a loaded machine delivers late), however long that takes.
  while (compute.pid === pid) await new Promise((resolve) => setTimeout(resolve, 5))
  const sealed = await compute.score({ inputs, recipient: jwk })
  t.ok(sealed.jwe, 'a new child answers')
  t.not(compute.pid, pid, 'it is another process')
})

t.test('calls beyond the in-flight limit fail at once', async (t) => {
  const small = new LocalScoreCompute({ callsInFlightMax: 1, callTimeoutMs: 30_000 })
  t.teardown(() => small.close())
  const { jwk } = await recipient()
  const first = small.score({ inputs, recipient: jwk })
  await t.rejects(small.score({ inputs, recipient: jwk }), ComputeFailedError)
  t.ok((await first).jwe)
})
