// Authorization checks for handlers: who may act is a property of the request (the session) and of the resource.
import { isAddressEqual, type Address } from 'viem'
import { HttpProblem } from '../http/problem.ts'

/**
 * 403 `forbidden` unless the session's wallet is the one the body or path names (compared case-insensitively, so
 * checksummed and lower-case forms match).
 */
export function requireSame(address: Address | string, expected: Address | string, what = 'this resource'): void {
  let same = false
  try {
    same = isAddressEqual(address as Address, expected as Address)
  } catch {
    same = false
  }
  if (!same) throw new HttpProblem(403, 'forbidden', `The signed-in wallet ${address} may not act on ${what}.`)
}

/** 403 `forbidden` unless the session's wallet is one of `allowed` (e.g. the job's client or an operator). */
export function requireOneOf(address: Address | string, allowed: ReadonlyArray<Address | string>, what = 'this resource'): void {
  const ok = allowed.some((candidate) => {
    try { return isAddressEqual(address as Address, candidate as Address) } catch { return false }
  })
  if (!ok) throw new HttpProblem(403, 'forbidden', `The signed-in wallet ${address} may not act on ${what}.`)
}
