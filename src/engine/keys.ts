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

/**
 * The sequence number of a minted id (`off_12` -> 12): Number of what follows the first `_`. Its digits are read in
 * place (the schedules take it for every offer and lease they hold: the slice and the parse were about 2 % of a
 * credit request's samples, issue 11); anything but 1 to 15 ASCII digits takes Number itself.
 */
export function seqOf(id: string): number {
  const from = id.indexOf('_') + 1
  const length = id.length - from
  if (length < 1 || length > 15) return Number(id.slice(from))
  let seq = 0
  for (let i = from; i < id.length; i++) {
    const digit = id.charCodeAt(i) - 0x30
    if (digit < 0 || digit > 9) return Number(id.slice(from))
    seq = seq * 10 + digit
  }
  return seq
}

/**
 * Whether two addresses are the same, ignoring case: what `a.toLowerCase() === b.toLowerCase()` answers, without the
 * two lowercased copies it allocates per call (several calls per credit request and match, issue 11). Code unit by
 * code unit with ASCII letters folded; a string with a code unit outside ASCII takes toLowerCase (whose folding of
 * other letters can change a string's length).
 */
export function sameAddress(a: string, b: string): boolean {
  if (a === b) return true
  if (a.length !== b.length) return nonAsciiSame(a, b)
  for (let i = 0; i < a.length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    if (x > 0x7f || y > 0x7f) return nonAsciiSame(a, b)
    if ((x | 0x20) !== (y | 0x20) || !isAsciiLetter(x | 0x20)) return nonAsciiSame(a, b)
  }
  return true
}

const isAsciiLetter = (lower: number): boolean => lower >= 0x61 && lower <= 0x7a

/** sameAddress's answer once the ASCII comparison found a difference: false unless a non-ASCII code unit folds. */
function nonAsciiSame(a: string, b: string): boolean {
  // Only a string with a code unit outside ASCII can fold to a different length or to ASCII letters.
  return hasNonAscii(a) || hasNonAscii(b) ? a.toLowerCase() === b.toLowerCase() : false
}

function hasNonAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return true
  return false
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
