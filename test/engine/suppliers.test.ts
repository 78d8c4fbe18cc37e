// The supplier directory (issue 9, case 2): credit goes only to a domain's listed address on the request's network,
// never to a lender, a session key, the credit contract or the borrower; operators manage the directory; the
// configuration seeds it without overriding an operator.
import t from 'tap'
import { Engine } from '../../src/engine/index.ts'
import type { Change, SupplierInput } from '../../src/engine/index.ts'
import {
  BORROWER, FakeWallets, NET, SUPPLIER, T0, addr, applyChanges, canonical, creditRequest, lenderInput, newEngine, registerBacking, unwrap,
} from './fixtures/world.ts'

const OPERATOR = addr(0x0e)
const CONTRACT = addr(0xcc)
const SECOND = addr(0x51)
const TOKEN = addr(0xdd)
const SIGNER = addr(0xde)

function world() {
  const { engine } = newEngine({
    operators: [OPERATOR],
    serviceAddresses: { [NET]: { [CONTRACT.toLowerCase()]: 'the credit contract', [TOKEN.toLowerCase()]: 'the USDC token contract', [SIGNER.toLowerCase()]: "the service's lease signer" } },
  })
  registerBacking(engine)
  unwrap(engine.putSupplier({ domain: 'shop.example', name: 'Shop', addresses: { [NET]: [SUPPLIER, SECOND] }, caller: OPERATOR }, T0))
  unwrap(engine.registerLender(lenderInput(1), T0))
  return engine
}

const codes = (engine: Engine, over: Parameters<typeof creditRequest>[0]) => {
  const result = engine.requestCredit(creditRequest({ supplierDomain: 'shop.example', ...over }), T0)
  const decision = unwrap(result)
  return { codes: decision.reasons.map((r) => r.code), offer: decision.offer, changes: result.ok ? result.changes : [] }
}

t.test('a request pays only one of the domain\'s addresses on its network; anything else is declined and changes nothing', async (t) => {
  const engine = world()
  const before = canonical(engine.snapshots())
  const cases: [string, Parameters<typeof creditRequest>[0], string[]][] = [
    ['unknown domain', { supplierDomain: 'nobody.example' }, ['supplier_unknown']],
    ['unknown domain, no address', { supplierDomain: 'nobody.example', supplierAddress: undefined }, ['supplier_unknown']],
    ['a fresh address of a known domain', { supplierAddress: addr(0x777) }, ['supplier_address_unverified']],
    ['another domain\'s address', { supplierDomain: 'supplier.example', supplierAddress: SECOND }, ['supplier_address_unverified']],
    ['a network the domain has no address on', { network: 'net-c', supplierAddress: undefined }, ['supplier_address_unverified']],
    ['the credit contract', { supplierAddress: CONTRACT }, ['supplier_not_allowed']],
    ['the token contract', { supplierAddress: TOKEN }, ['supplier_not_allowed']],
    ['the service\'s lease signer', { supplierAddress: SIGNER }, ['supplier_not_allowed']],
    ['an operator', { supplierAddress: OPERATOR }, ['supplier_not_allowed']],
    ['the zero address', { supplierAddress: `0x${'0'.repeat(40)}` }, ['supplier_not_allowed']],
    ['a registered lender', { supplierAddress: lenderInput(1).address }, ['supplier_not_allowed']],
    ['a lender\'s session key', { supplierAddress: lenderInput(1).sessionAddress }, ['supplier_not_allowed']],
  ]
  for (const [name, over, expected] of cases) {
    const got = codes(engine, over)
    t.same(got.codes, expected, name)
    t.equal(got.offer, null, `${name}: no offer`)
    t.same(got.changes, [], `${name}: nothing changed`)
  }
  t.equal(canonical(engine.snapshots()), before)
  const listed = codes(engine, { supplierAddress: SECOND })
  t.same(listed.codes, [], 'a listed address is approved')
  t.equal(listed.offer?.supplierAddress, SECOND)
  const byDefault = codes(engine, { supplierAddress: undefined })
  t.equal(byDefault.offer?.supplierAddress, SUPPLIER, 'no address: the domain\'s first on the network')
  t.same(codes(engine, { supplierDomain: 'SHOP.Example', supplierAddress: SUPPLIER.toLowerCase() as typeof SUPPLIER }).codes, [], 'domain and address compare case-insensitively')
})

t.test('a directory address that became a lender, or is the borrower, is not paid', async (t) => {
  const engine = world()
  unwrap(engine.registerLender(lenderInput(2, { address: SECOND, sessionAddress: addr(0x3002) }), T0))
  t.same(codes(engine, { supplierAddress: SECOND }).codes, ['supplier_not_allowed'])
  unwrap(engine.putSupplier({ domain: 'self.example', name: 'Self', addresses: { [NET]: [BORROWER] }, caller: OPERATOR }, T0))
  t.same(codes(engine, { supplierDomain: 'self.example', supplierAddress: undefined }).codes, ['supplier_not_allowed'], 'the default address is the borrower')
  t.match(engine.requestCredit(creditRequest({ supplierDomain: 'self.example', supplierAddress: BORROWER }), T0), { ok: false, error: { code: 'supplier_is_borrower' } })
})

t.test('only operators change the directory; a bad entry is refused and changes nothing', async (t) => {
  const engine = world()
  const before = canonical(engine.snapshots())
  const put = (over: Partial<SupplierInput & { caller: typeof OPERATOR }>) =>
    engine.putSupplier({ domain: 'new.example', name: 'New', addresses: { [NET]: [addr(0x60)] }, caller: OPERATOR, ...over }, T0 + 1)
  const refusals: [string, Parameters<typeof put>[0], string][] = [
    ['not an operator', { caller: BORROWER }, 'forbidden'],
    ['a lender', { caller: lenderInput(1).address }, 'forbidden'],
    ['bad domain', { domain: 'not a domain' }, 'invalid_supplier_domain'],
    ['domain with a trailing dot', { domain: 'new.example.' }, 'invalid_supplier_domain'],
    ['empty name', { name: '' }, 'invalid_supplier_name'],
    ['no network', { addresses: {} }, 'invalid_supplier_addresses'],
    ['empty list', { addresses: { [NET]: [] } }, 'invalid_supplier_addresses'],
    ['duplicate', { addresses: { [NET]: [addr(0x60), addr(0x60)] } }, 'invalid_supplier_addresses'],
    ['not an address', { addresses: { [NET]: ['0x12' as typeof SUPPLIER] } }, 'invalid_supplier_addresses'],
    ['the credit contract', { addresses: { [NET]: [CONTRACT] } }, 'supplier_not_allowed'],
    ['the token contract, in any case', { addresses: { [NET]: [TOKEN.toUpperCase().replace('0X', '0x') as typeof SUPPLIER] } }, 'supplier_not_allowed'],
    ['a lender', { addresses: { [NET]: [lenderInput(1).address] } }, 'supplier_not_allowed'],
    ['a session key', { addresses: { [NET]: [addr(0x61), lenderInput(1).sessionAddress] } }, 'supplier_not_allowed'],
  ]
  for (const [name, over, code] of refusals) t.match(put(over), { ok: false, error: { code } }, name)
  t.match(engine.removeSupplier({ domain: 'shop.example', caller: BORROWER }, T0), { ok: false, error: { code: 'forbidden' } })
  t.match(engine.removeSupplier({ domain: 'nobody.example', caller: OPERATOR }, T0), { ok: false, error: { code: 'supplier_not_found' } })
  t.equal(canonical(engine.snapshots()), before, 'nothing changed')
  const added = put({ domain: 'New.Example' })
  t.match(added, { ok: true, value: { domain: 'new.example', origin: 'operator', removedAtMs: null } })
  t.same(added.ok && added.changes.map((c) => `${c.kind}:${c.id}`), ['supplier:new.example'])
})

t.test('removing a domain stops new credit there; a live offer keeps its supplier', async (t) => {
  const engine = world()
  const offer = codes(engine, { supplierAddress: SECOND }).offer
  const removed = unwrap(engine.removeSupplier({ domain: 'shop.example', caller: OPERATOR }, T0 + 5))
  t.equal(removed.removedAtMs, T0 + 5)
  t.same(codes(engine, { supplierAddress: SECOND }).codes, ['supplier_unknown'])
  t.equal(engine.getOffer(offer!.offerId)?.supplierAddress, SECOND, 'the live offer is untouched')
  t.notOk(engine.supplierDirectory().some((e) => e.domain === 'shop.example'))
  t.match(engine.removeSupplier({ domain: 'shop.example', caller: OPERATOR }, T0), { ok: false, error: { code: 'supplier_not_found' } })
})

t.test('the configuration seeds the directory; an operator\'s entry or removal survives a restart and the seed', async (t) => {
  const wallets = new FakeWallets()
  const config = { operators: [OPERATOR] }
  const store = new Map<string, Change>()
  const engine = new Engine(config, wallets)
  const seed: SupplierInput[] = [
    { domain: 'a.example', name: 'A', addresses: { [NET]: [addr(0x70)] } },
    { domain: 'b.example', name: 'B', addresses: { [NET]: [addr(0x71)] } },
    { domain: 'c.example', name: 'C', addresses: { [NET]: [addr(0x72)] } },
  ]
  const first = engine.seedSuppliers(seed, T0)
  applyChanges(store, first.ok ? first.changes : [])
  t.same(engine.supplierDirectory().map((e) => [e.domain, e.origin]), [['a.example', 'config'], ['b.example', 'config'], ['c.example', 'config']])
  applyChanges(store, (engine.putSupplier({ domain: 'a.example', name: 'A by hand', addresses: { [NET]: [addr(0x80)] }, caller: OPERATOR }, T0 + 1) as { changes: Change[] }).changes)
  applyChanges(store, (engine.removeSupplier({ domain: 'b.example', caller: OPERATOR }, T0 + 1) as { changes: Change[] }).changes)

  // The restart: the engine rebuilt from what the store holds, then seeded again from a configuration that changed c,
  // still names a and b, and adds d.
  const restarted = new Engine(config, wallets, store.values())
  t.equal(canonical(restarted.supplierDirectory()), canonical(engine.supplierDirectory()), 'the directory survives the restart')
  const again = restarted.seedSuppliers([
    seed[0] as SupplierInput, seed[1] as SupplierInput,
    { domain: 'c.example', name: 'C', addresses: { [NET]: [addr(0x73)] } },
    { domain: 'd.example', name: 'D', addresses: { [NET]: [addr(0x74)] } },
  ], T0 + 2)
  t.same(again.ok && again.changes.map((c) => c.id).sort(), ['c.example', 'd.example'], 'only what the configuration changed is written')
  t.same(restarted.supplierDirectory().map((e) => [e.domain, e.name, e.addresses[NET]]), [
    ['a.example', 'A by hand', [addr(0x80)]],
    ['c.example', 'C', [addr(0x73)]],
    ['d.example', 'D', [addr(0x74)]],
  ], 'the operator\'s entry and removal stand; the configuration\'s own entries follow it')
  const dropped = restarted.seedSuppliers(seed.slice(0, 1), T0 + 3)
  t.same(dropped.ok && dropped.changes.map((c) => c.id).sort(), ['c.example', 'd.example'], 'configured domains dropped from the configuration are removed')
  t.same(restarted.supplierDirectory().map((e) => e.domain), ['a.example'], 'the operator\'s entry stays')
  const before = canonical(restarted.snapshots())
  t.match(restarted.seedSuppliers([seed[2] as SupplierInput, seed[2] as SupplierInput], T0 + 4), { ok: false, error: { code: 'invalid_supplier_domain' } }, 'a domain configured twice stops the start')
  t.equal(canonical(restarted.snapshots()), before, 'a refused seed changes nothing')
})

t.test('the seed refuses the credit contract but not a supplier that since registered as a lender (underwriting declines it)', async (t) => {
  const { engine } = newEngine({ operators: [OPERATOR], serviceAddresses: { [NET]: { [CONTRACT.toLowerCase()]: 'the credit contract' } } })
  registerBacking(engine)
  t.match(engine.seedSuppliers([{ domain: 'x.example', name: 'X', addresses: { [NET]: [CONTRACT] } }], T0), { ok: false, error: { code: 'supplier_not_allowed' } })
  unwrap(engine.registerLender(lenderInput(5, { address: addr(0x90) }), T0))
  const seeded = engine.seedSuppliers([{ domain: 'x.example', name: 'X', addresses: { [NET]: [addr(0x90)] } }], T0)
  t.equal(seeded.ok, true, 'the service still starts')
  t.same(codes(engine, { supplierDomain: 'x.example', supplierAddress: undefined }).codes, ['supplier_not_allowed'])
})
