// The passport's signing and verification (src/passport/passport.ts): events verify with viem's verifyTypedData
// against the published domain; a changed field, a reordered or a dropped event is detected.
import t from 'tap'
import { verifyTypedData, zeroHash, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signDigest } from '../../src/chain/lease-authorization.ts'
import { canonicalJson, passportHash, passportDomain, passportTypes, signPassportEvent, verifyPassport, type PassportEventData, type SignedPassportEvent } from '../../src/passport/passport.ts'

const issuer = privateKeyToAccount(generatePrivateKey())
const agent = privateKeyToAccount(generatePrivateKey()).address as Address

async function chain(n: number): Promise<SignedPassportEvent[]> {
  const events: SignedPassportEvent[] = []
  for (let i = 1; i <= n; i++) {
    const data: PassportEventData = {
      agent, sequence: i, prevHash: events.at(-1)?.hash ?? zeroHash, kind: i % 2 ? 'job_failed' : 'suspension_lifted',
      issuedAtMs: 1_700_000_000_000 + i, details: canonicalJson({ jobId: `job_${i}`, outstandingPrincipalAtomic: 10n * BigInt(i) }),
    }
    events.push(await signPassportEvent(issuer, data))
  }
  return events
}

t.test('each event verifies with verifyTypedData against the domain; the chain verifies', async (t) => {
  const events = await chain(4)
  for (const e of events) {
    t.ok(await verifyTypedData({
      address: issuer.address, domain: passportDomain, types: passportTypes, primaryType: 'PassportEvent',
      message: { agent: e.agent, sequence: BigInt(e.sequence), prevHash: e.prevHash, kind: e.kind, issuedAtMs: BigInt(e.issuedAtMs), details: e.details },
      signature: e.signature,
    }))
  }
  t.same(await verifyPassport(events, { issuer: issuer.address }), { ok: true, problems: [] })
  t.same((await verifyPassport(events.slice(2), { issuer: issuer.address, prevHash: events[1]?.hash })).ok, true, 'a later page with the hash before it')
  t.equal((await signPassportEvent(issuer, events[0] as PassportEventData)).signature, events[0]?.signature, 'deterministic signature (RFC 6979)')
  t.equal(canonicalJson({ b: 1n, a: [2n] }), '{"a":["2"],"b":"1"}')
})

t.test('tampering, reordering and dropping are detected', async (t) => {
  const events = await chain(4)
  const fields: (keyof PassportEventData)[] = ['agent', 'sequence', 'prevHash', 'kind', 'issuedAtMs', 'details']
  const changed: Record<keyof PassportEventData, unknown> = {
    agent: issuer.address, sequence: 9, prevHash: `0x${'11'.repeat(32)}`, kind: 'advance_repaid', issuedAtMs: 1, details: '{}',
  }
  for (const field of fields) {
    const tampered = events.map((e, i) => (i === 1 ? { ...e, [field]: changed[field] } : e))
    t.equal((await verifyPassport(tampered, { issuer: issuer.address })).ok, false, `changed ${field}`)
  }
  const swapped = [events[0], events[2], events[1], events[3]] as SignedPassportEvent[]
  t.equal((await verifyPassport(swapped, { issuer: issuer.address })).ok, false, 'reordered')
  t.equal((await verifyPassport([events[0], events[2], events[3]] as SignedPassportEvent[], { issuer: issuer.address })).ok, false, 'dropped')
  t.equal((await verifyPassport(events.slice(1), { issuer: issuer.address, prevHash: zeroHash })).ok, false, 'the first dropped')
  t.equal((await verifyPassport(events, { issuer: privateKeyToAccount(generatePrivateKey()).address })).ok, false, 'another issuer')
  t.equal((await verifyPassport(events, { issuer: issuer.address, domain: { name: 'other', version: '1' } })).ok, false, 'another domain')
})

t.test('the service\'s synchronous signature (libsecp256k1) is viem\'s: the same bytes, RFC 6979', async (t) => {
  const key = generatePrivateKey()
  const data: PassportEventData = { agent, sequence: 1, prevHash: zeroHash, kind: 'advance_repaid', issuedAtMs: 1_700_000_000_000, details: '{}' }
  const viaViem = await signPassportEvent(privateKeyToAccount(key), data)
  t.equal(signDigest(passportHash(data), key), viaViem.signature)
})

t.test('a job_failed entry signed before reasons were codes (a client\'s text in its details) still verifies, unchanged', async (t) => {
  // Signed by the release before failure codes (its signPassportEvent, a fixed test key) and kept here as it was
  // published: entries are never rewritten, so the change of /fail's reason must leave such entries verifiable.
  const oldIssuer = '0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A'
  const old: SignedPassportEvent = {
    agent: '0x1563915e194D8CfBA1943570603F7606A3115508',
    sequence: 1,
    prevHash: zeroHash,
    kind: 'job_failed',
    issuedAtMs: 1_790_000_000_000,
    details: '{"borrowerReputationBps":4000,"borrowerSuspended":true,"client":"0x5CbDd86a2FA8Dc4bDdd8a8f69dBa48572EeC07FB","declinedOfferIds":[],' +
      '"defaultedAdvanceIds":[],"jobId":"job_old","outstandingPrincipalAtomic":"0","reason":"work not delivered, see https://example.com/why",' +
      '"txHash":"0xabababababababababababababababababababababababababababababababab"}',
    hash: '0x7d29d3d280397ae9377659d5f7e2c75cfa0699885c63052f96e06de65d0dde10',
    signature: '0xe3e8583e885f6c84c9f8cb265655f4173302e4c8866cf03ac8fdb38a2eaf23495e2641764da0a7df96ca0f897a72674c00809a22b3bcb134495f6ac5ab1740f61c',
  }
  t.same(await verifyPassport([old], { issuer: oldIssuer }), { ok: true, problems: [] })
  t.equal(passportHash(old), old.hash)
})
