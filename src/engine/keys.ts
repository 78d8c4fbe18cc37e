// Keys and small comparisons the engine's modules share: map keys, id sequences, address equality, code-unit order.

/** A lender's session wallet on one network for one asset. */
export function walletKey(lender: string, network: string, asset: string): string {
  return `${lender}\u0000${network}\u0000${asset}`
}

/** The matching book of one asset on one network. */
export function bookKey(network: string, asset: string): string {
  return `${network}\u0000${asset}`
}

/** The id of the insurance reserve record of one asset on one network. */
export function reserveId(network: string, asset: string): string {
  return `reserve:${network}:${asset}`
}

/** The sequence number of a minted id (`off_12` -> 12). */
export function seqOf(id: string): number {
  return Number(id.slice(id.indexOf('_') + 1))
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}

export function isBps(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 10_000
}

/**
 * Order of strings by UTF-16 code units, the same on every machine: `localeCompare` depends on the locale (and
 * ignores case first), so two processes could restore or list the same records in different orders.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
