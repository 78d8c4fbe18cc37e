// The caller's public key: generated keys of every accepted curve pass; what cannot be encrypted to is named before
// any payment: an off-curve point (which WebCrypto would accept), a small-order X25519 point, wrong lengths, a
// curve that does not fit the key type.
import t from 'tap'
import { exportJWK, generateKeyPair } from 'jose'
import { recipientKeyProblem, type RecipientKey } from '../../src/score/recipient-key.ts'

async function publicJwk(crv: 'P-256' | 'P-384' | 'P-521' | 'X25519'): Promise<RecipientKey> {
  const { publicKey } = await generateKeyPair('ECDH-ES', { crv, extractable: true })
  return (await exportJWK(publicKey)) as RecipientKey
}

/** The same point with its last coordinate byte changed: off the curve (with overwhelming probability, checked). */
function nudged(jwk: RecipientKey): RecipientKey {
  const y = Buffer.from(jwk.y as string, 'base64url')
  y[y.length - 1] = (y[y.length - 1] as number) ^ 1
  return { ...jwk, y: y.toString('base64url') }
}

t.test('keys of every accepted curve pass', async (t) => {
  for (const crv of ['P-256', 'P-384', 'P-521', 'X25519'] as const) {
    t.equal(await recipientKeyProblem(await publicJwk(crv)), undefined, crv)
  }
})

t.test('what cannot be encrypted to is named', async (t) => {
  for (const crv of ['P-256', 'P-384', 'P-521'] as const) {
    t.match(await recipientKeyProblem(nudged(await publicJwk(crv))), /not on/, `${crv}: an off-curve point`)
  }
  const p256 = await publicJwk('P-256')
  t.match(await recipientKeyProblem({ ...p256, x: (p256.x as string).slice(1) }), /32 bytes/, 'a short coordinate')
  t.match(await recipientKeyProblem({ kty: 'EC', crv: 'P-256', x: p256.x }), /needs y/)
  t.match(await recipientKeyProblem({ ...p256, kty: 'OKP' }), /needs kty EC/)
  const p = 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n
  t.match(await recipientKeyProblem({ ...p256, x: Buffer.from(p.toString(16), 'hex').toString('base64url') }), /field prime/)
  const zero = Buffer.alloc(32).toString('base64url')
  t.match(await recipientKeyProblem({ kty: 'OKP', crv: 'X25519', x: zero }), /no key agreement/, 'a small-order X25519 point')
  const one = Buffer.from('01' + '00'.repeat(31), 'hex').toString('base64url')
  t.match(await recipientKeyProblem({ kty: 'OKP', crv: 'X25519', x: one }), /no key agreement/)
  const x25519 = await publicJwk('X25519')
  t.match(await recipientKeyProblem({ ...x25519, y: x25519.x }), /has no y/)
  t.match(await recipientKeyProblem({ ...x25519, kty: 'EC' }), /needs kty OKP/)
})
