// Authorization checks for handlers: who may act is a property of the request (the session) and of the resource.
import { isAddressEqual, type Address } from 'viem'
import { HttpProblem } from '../http/problem.ts'

/**
 * 403 `forbidden` unless the session's wallet is the one the body or path names (compared case-insensitively, so
 * checksummed and lower-case forms match).
 */
export function requireSame(address: Address | string, expected: Address | string, what = 'this resource'): void {
  if (!sameWallet(address, expected)) throw notAllowed(address, what)
}

/** 403 `forbidden` unless the session's wallet is one of `allowed` (e.g. the job's client or an operator). */
export function requireOneOf(address: Address | string, allowed: ReadonlyArray<Address | string>, what = 'this resource'): void {
  if (!allowed.some((candidate) => sameWallet(address, candidate))) throw notAllowed(address, what)
}

/** Whether two addresses name the same wallet, in any letter case; what is not an address names none. */
function sameWallet(a: Address | string, b: Address | string): boolean {
  try {
    return isAddressEqual(a as Address, b as Address)
  } catch {
    return false
  }
}

const notAllowed = (address: Address | string, what: string) => new HttpProblem(403, 'forbidden', `The signed-in wallet ${address} may not act on ${what}.`)
