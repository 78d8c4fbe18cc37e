// The supplier directory (issue 9, case 2): the only addresses a principal may go to. A credit request names a
// supplier domain; underwriting declines it unless the domain is in the directory and the supplier address (or, when
// the request names none, the domain's first address on the request's network) is one of the domain's addresses on
// that network. The lease authorization the service signs binds that address, so the contract enforces it too.
import { fail, forbidden } from './errors.ts'
import { compareCodeUnits, sameAddress } from './keys.ts'
import { touch } from './changes.ts'
import type { EngineState } from './state.ts'
import type { Address, CreditRequestInput, DeclineReason, EngineError, SupplierInput, SupplierRecord } from './types.ts'

type Refused = { ok: false; error: EngineError }

/** A host name, lower case: labels of letters, digits and inner hyphens, 253 characters at most. */
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
/** The one string /^0x0{40}$/ matches, compared as a string: a regular expression's test per credit request cost more. */
const ZERO_ADDRESS = `0x${'0'.repeat(40)}`
/** Bounds of one entry: a directory entry is read on every credit request, and a list of them is served whole. */
export const SUPPLIER_LIMITS = Object.freeze({ nameLengthMax: 200, networksMax: 16, addressesPerNetworkMax: 16 })

export function normalDomain(domain: string): string {
  return domain.toLowerCase()
}

/** The live (not removed) entry of `domain`. */
export function liveSupplier(s: EngineState, domain: string): SupplierRecord | undefined {
  const entry = s.suppliers.get(normalDomain(domain))
  return entry === undefined || entry.removedAtMs !== null ? undefined : entry
}

/**
 * Why `address` may never be a supplier on `network`, or undefined: a registered lender or its session key (it would
 * pay itself), the credit contract or another of the service's contracts (a token, a registry: the principal would
 * sit where nobody can claim it), the service's operator or lease-signer key or an operator wallet (the service would
 * pay itself), the zero address (the contract refuses to pay it, so every lease on such an offer would expire unpaid
 * and cost its lender a missed order). The borrower is checked by the request itself.
 */
export function notAllowedAsSupplier(s: EngineState, network: string, address: Address, lenders = true): string | undefined {
  if (address === ZERO_ADDRESS) return `${address} is the zero address`
  if (lenders && s.lenders.has(address)) return `${address} is a registered lender`
  if (lenders && s.lenderBySession.has(address)) return `${address} is a lender's session key`
  const service = s.config.serviceAddresses[network]?.[address.toLowerCase()]
  if (service !== undefined) return `${address} is ${service} on ${network}`
  if (s.config.operators.some((operator) => sameAddress(operator, address))) return `${address} is an operator of this service`
  return undefined
}

/**
 * Why an entry is not one the directory can hold, or undefined. `lenders: false` (the configuration's seed) leaves
 * registered lenders to underwriting: a configured supplier that later signed in and registered as a lender must not
 * stop the service from starting; no request naming it is approved all the same.
 */
export function invalidSupplier(s: EngineState, input: SupplierInput, lenders = true): Refused | undefined {
  if (!DOMAIN.test(normalDomain(input.domain))) return fail('invalid', 'invalid_supplier_domain', 'domain must be a host name (letters, digits, hyphens and dots)')
  if (typeof input.name !== 'string' || input.name.length < 1 || input.name.length > SUPPLIER_LIMITS.nameLengthMax) {
    return fail('invalid', 'invalid_supplier_name', `name must be 1..${SUPPLIER_LIMITS.nameLengthMax} characters`)
  }
  const networks = Object.keys(input.addresses)
  if (networks.length < 1 || networks.length > SUPPLIER_LIMITS.networksMax) {
    return fail('invalid', 'invalid_supplier_addresses', `addresses must name 1..${SUPPLIER_LIMITS.networksMax} networks`)
  }
  for (const network of networks) {
    const list = input.addresses[network] as Address[]
    if (!Array.isArray(list) || list.length < 1 || list.length > SUPPLIER_LIMITS.addressesPerNetworkMax) {
      return fail('invalid', 'invalid_supplier_addresses', `addresses.${network} must list 1..${SUPPLIER_LIMITS.addressesPerNetworkMax} addresses`)
    }
    for (const [i, address] of list.entries()) {
      if (!ADDRESS.test(address)) return fail('invalid', 'invalid_supplier_addresses', `addresses.${network}[${i}] is not an address`)
      if (list.findIndex((other) => sameAddress(other, address)) !== i) {
        return fail('invalid', 'invalid_supplier_addresses', `addresses.${network} lists ${address} twice`)
      }
      const why = notAllowedAsSupplier(s, network, address, lenders)
      if (why !== undefined) return fail('invalid', 'supplier_not_allowed', `${why}: never a supplier`)
    }
  }
  return undefined
}

function put(s: EngineState, input: SupplierInput, origin: SupplierRecord['origin'], nowMs: number): SupplierRecord {
  const addresses: Record<string, Address[]> = {}
  for (const network of Object.keys(input.addresses).sort()) addresses[network] = [...(input.addresses[network] as Address[])]
  const record: SupplierRecord = { domain: normalDomain(input.domain), name: input.name, addresses, origin, updatedAtMs: nowMs, removedAtMs: null }
  s.suppliers.set(record.domain, record)
  touch(s, 'supplier', record.domain)
  return record
}

/** An operator adds or replaces a domain's entry. */
export function putSupplier(s: EngineState, input: SupplierInput & { caller: Address }, isOperator: boolean, nowMs: number): Refused | { ok: true; value: SupplierRecord } {
  if (!isOperator) return forbidden('the supplier directory is managed by the service\'s operators')
  const invalid = invalidSupplier(s, input)
  if (invalid) return invalid
  return { ok: true, value: { ...put(s, input, 'operator', nowMs) } }
}

/**
 * An operator removes a domain: no new credit goes there. Live offers keep their supplier (the lease authorizations
 * already signed bind it, and the borrower's purchase is under way); the entry stays as removed, so the
 * configuration's seed does not bring it back at the next start.
 */
export function removeSupplier(s: EngineState, domain: string, isOperator: boolean, nowMs: number): Refused | { ok: true; value: SupplierRecord } {
  if (!isOperator) return forbidden('the supplier directory is managed by the service\'s operators')
  const entry = liveSupplier(s, domain)
  if (entry === undefined) return fail('not_found', 'supplier_not_found', `no supplier ${normalDomain(domain)} in the directory`)
  const removed: SupplierRecord = { ...entry, origin: 'operator', updatedAtMs: nowMs, removedAtMs: nowMs }
  s.suppliers.set(removed.domain, removed)
  touch(s, 'supplier', removed.domain)
  return { ok: true, value: { ...removed } }
}

/**
 * The configuration's entries at start-up. A domain the configuration names and no operator has touched follows the
 * configuration (added, or changed to it); a configured domain no longer in the configuration is removed; an
 * operator's entry or removal is kept. An invalid configured entry (the credit contract among them) stops the start,
 * refused with its reason.
 */
export function seedSuppliers(s: EngineState, entries: readonly SupplierInput[], nowMs: number): Refused | { ok: true; value: SupplierRecord[] } {
  const seeded = new Set<string>()
  for (const input of entries) {
    const invalid = invalidSupplier(s, input, false)
    if (invalid) return fail(invalid.error.class, invalid.error.code, `configured supplier ${input.domain}: ${invalid.error.message}`)
    const domain = normalDomain(input.domain)
    if (seeded.has(domain)) return fail('invalid', 'invalid_supplier_domain', `configured supplier ${domain} is listed twice`)
    seeded.add(domain)
  }
  for (const input of entries) {
    const stored = s.suppliers.get(normalDomain(input.domain))
    if (stored?.origin === 'operator') continue
    if (stored !== undefined && stored.removedAtMs === null && stored.name === input.name && sameAddresses(stored.addresses, input.addresses)) continue
    put(s, input, 'config', nowMs)
  }
  for (const entry of s.suppliers.values()) {
    if (entry.origin === 'config' && entry.removedAtMs === null && !seeded.has(entry.domain)) {
      s.suppliers.set(entry.domain, { ...entry, updatedAtMs: nowMs, removedAtMs: nowMs })
      touch(s, 'supplier', entry.domain)
    }
  }
  return { ok: true, value: directory(s) }
}

function sameAddresses(a: Record<string, Address[]>, b: Record<string, Address[]>): boolean {
  const networks = Object.keys(a)
  if (networks.length !== Object.keys(b).length) return false
  return networks.every((n) => {
    const x = a[n] as Address[]
    const y = b[n]
    return y !== undefined && x.length === y.length && x.every((address, i) => sameAddress(address, y[i] as Address))
  })
}

/** The live entries, by domain. */
export function directory(s: EngineState): SupplierRecord[] {
  return [...s.suppliers.values()].filter((e) => e.removedAtMs === null).sort((a, b) => compareCodeUnits(a.domain, b.domain)).map((e) => ({ ...e }))
}

/**
 * The supplier a credit request would pay and the reasons to decline it: the domain must be in the directory, the
 * address one of its addresses on the request's network (default: the first), and never the borrower, a lender, a
 * session key or the credit contract; on a job, never its client either: a client paid as the supplier could then fail
 * the job and have the whole escrow back, the same harm as a borrower that is its own job's client.
 */
export function supplierOf(s: EngineState, input: CreditRequestInput, jobClient?: Address): { address: Address | undefined; reasons: DeclineReason[] } {
  const reasons: DeclineReason[] = []
  const entry = liveSupplier(s, input.supplierDomain)
  const listed = entry?.addresses[input.network] ?? []
  const address = input.supplierAddress ?? listed[0]
  const why = address === undefined
    ? undefined
    : sameAddress(address, input.agent) ? 'the borrower'
    : jobClient !== undefined && sameAddress(address, jobClient) ? 'the job\'s client'
    : notAllowedAsSupplier(s, input.network, address)
  if (why !== undefined) reasons.push({ code: 'supplier_not_allowed', message: `${why}: never a supplier` })
  if (entry === undefined) {
    reasons.push({ code: 'supplier_unknown', message: `${normalDomain(input.supplierDomain)} is not in the supplier directory (GET /suppliers)` })
  } else if (why === undefined && (address === undefined || !listed.some((a) => sameAddress(a, address)))) {
    reasons.push({
      code: 'supplier_address_unverified',
      message: listed.length === 0
        ? `${entry.domain} has no payout address on ${input.network}`
        : `the supplierAddress is not one of ${entry.domain}'s addresses on ${input.network} (GET /suppliers)`,
    })
  }
  return { address, reasons }
}
