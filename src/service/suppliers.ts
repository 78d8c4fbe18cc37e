// The supplier directory: where a credit request's `supplierDomain` resolves to the address the lender pays.
import { getAddress, type Address } from 'viem'
import type { SupplierEntry } from '../app/config.ts'

/** A credit request names no supplier address and its supplierDomain is not in the directory. */
export class SupplierUnresolvedError extends Error {
  override readonly name = 'SupplierUnresolvedError'
}

export class SupplierDirectory {
  readonly #byDomain = new Map<string, SupplierEntry>()

  constructor(entries: readonly SupplierEntry[]) {
    for (const entry of entries) this.#byDomain.set(entry.domain.toLowerCase(), { ...entry, address: getAddress(entry.address) })
  }

  resolve(domain: string): Address | undefined {
    return this.#byDomain.get(domain.toLowerCase())?.address
  }
}
