// Configuration refused when it loads, naming the key, as `npm start` reports it ("cannot start: ..."). The config
// file's `engine` key: thresholds of EngineConfig by name; a misspelt threshold was kept and ignored (the engine ran on
// its default, the operator none the wiser) and a value out of range stopped the start later as the engine's
// RangeError. REQUEST_LOG and HTTP_LEGACY_CLIENTS: any value but 0 was taken for 1. PUBLIC_BASE_URL: a trailing slash
// doubled in every published link, and one that did not parse stopped the start late, as a bare "Invalid URL".
// TRUSTED_PROXIES: a range or a host name was kept, and never matched a peer. An unknown key of the file read
// "schema is false" and "must not have additional properties", naming none.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, loadServiceConfig } from '../../src/app/config.ts'

const dir = mkdtempSync(join(tmpdir(), 'config-engine-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

function withEngine(engine: unknown) {
  const file = join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ engine }))
  return () => loadServiceConfig({ CONFIG_FILE: file })
}

t.test('a threshold the engine has is taken', async (t) => {
  t.same(withEngine({ liveOffersPerBorrowerMax: 2, lenderProbationSeconds: 60 })().engine, { liveOffersPerBorrowerMax: 2, lenderProbationSeconds: 60 })
})

t.test('a key the engine has no threshold of is refused, naming it', async (t) => {
  t.throws(withEngine({ liveOfferPerBorrowerMax: 2 }), { name: 'ConfigError', message: /engine\.liveOfferPerBorrowerMax: not an engine threshold/ })
  t.throws(withEngine({ operators: 1 }), ConfigError, 'not a number threshold')
})

t.test('the lease and offer lifetimes are refused under engine: leaseTtlSeconds and offerTtlSeconds set them', async (t) => {
  t.throws(withEngine({ leaseTtlMs: 60_000 }), { name: 'ConfigError', message: /engine\.leaseTtlMs: set leaseTtlSeconds instead/ })
  t.throws(withEngine({ offerTtlMs: 60_000 }), { name: 'ConfigError', message: /engine\.offerTtlMs: set offerTtlSeconds instead/ })
})

t.test('a threshold out of its range is refused when the configuration loads', async (t) => {
  t.throws(withEngine({ jobAdvanceRateBps: 20_000 }), { name: 'ConfigError', message: /jobAdvanceRateBps must be an integer in 0\.\.10000/ })
  t.throws(withEngine({ leasesPerOfferMax: 0 }), { name: 'ConfigError', message: /leasesPerOfferMax must be a positive integer/ })
})

t.test('REQUEST_LOG and HTTP_LEGACY_CLIENTS take 0 or 1: another value was taken for 1, unseen', async (t) => {
  t.equal(loadServiceConfig({ REQUEST_LOG: '0' }).requestLog, false)
  t.equal(loadServiceConfig({ REQUEST_LOG: '1' }).requestLog, true)
  t.equal(loadServiceConfig({ HTTP_LEGACY_CLIENTS: '0' }).legacyClients, false)
  t.equal(loadServiceConfig({}).legacyClients, true)
  t.throws(() => loadServiceConfig({ REQUEST_LOG: 'false' }), { name: 'ConfigError', message: 'REQUEST_LOG must be 0 or 1, got "false"' })
  t.throws(() => loadServiceConfig({ HTTP_LEGACY_CLIENTS: 'off' }), { name: 'ConfigError', message: 'HTTP_LEGACY_CLIENTS must be 0 or 1, got "off"' })
})

t.test('PUBLIC_BASE_URL: an http(s) URL, published without a trailing slash; another is refused when it loads', async (t) => {
  t.equal(loadServiceConfig({ PUBLIC_BASE_URL: 'https://credit.example/' }).publicBaseUrl, 'https://credit.example', 'each published link appends a path to it')
  t.equal(loadServiceConfig({ PUBLIC_BASE_URL: 'https://credit.example:8443' }).publicBaseUrl, 'https://credit.example:8443')
  for (const bad of ['credit.example', 'ftp://credit.example', 'https://credit.example/?v=1', 'https://user:pw@credit.example']) {
    t.throws(() => loadServiceConfig({ PUBLIC_BASE_URL: bad }), { name: 'ConfigError', message: /^PUBLIC_BASE_URL \/ publicBaseUrl must be/ }, bad)
  }
})

t.test('TRUSTED_PROXIES lists addresses: a range or a name, which never matched a peer, is refused', async (t) => {
  t.same(loadServiceConfig({ TRUSTED_PROXIES: '10.0.0.1, ::1' }).trustedProxies, ['10.0.0.1', '::1'])
  for (const bad of ['10.0.0.0/8', 'proxy.internal']) {
    t.throws(() => loadServiceConfig({ TRUSTED_PROXIES: bad }), { name: 'ConfigError', message: /^TRUSTED_PROXIES \/ trustedProxies: .* is not an IP address/ }, bad)
  }
})

t.test('an unknown key of the config file is named in the refusal', async (t) => {
  const file = join(dir, 'unknown.json')
  writeFileSync(file, JSON.stringify({ leaseTtlSecond: 30, stream: { retentionMS: 5000 } }))
  const refusal = t.throws(() => loadServiceConfig({ CONFIG_FILE: file }), ConfigError) as unknown as ConfigError
  t.match(refusal.message, /\/: unknown key\(s\) \["leaseTtlSecond"\]/)
  t.match(refusal.message, /\/stream: unknown key\(s\) \["retentionMS"\]/)
  t.notMatch(refusal.message, /schema is false/, 'not the schema\'s words')
})
