// bearerToken reads `Authorization: Bearer <token>` with a scan instead of a regular expression (issue 11): checked
// here against the expression it replaced over generated values at the rule's edges (the scheme in any case and with
// look-alike letters, no space, several spaces, tabs, trailing spaces, a space inside the token, non-ASCII, empty).
import t from 'tap'
import { bearerToken } from '../../src/http/request.ts'

/** What bearerToken answered before. */
function reference(authorization: string): string | undefined {
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(authorization)
  return match === null ? undefined : (match[1] as string)
}

t.test('bearerToken answers what the regular expression matched', async (t) => {
  const edges = ['', 'Bearer', 'Bearer ', 'Bearer  ', 'Bearer x', 'bearer x', 'BEARER x', 'BeArEr x', 'Bearerx', 'Bearer\tx', 'Bearer x ', 'Bearer x  ', 'Bearer  x', 'Bearer x y', 'Bearer x\t', ' Bearer x', 'Basic x', 'Bearer ✓', 'Bearer x\n', 'Bearer \u00a0', 'Bearer\u00a0x', 'B\u0100arer x', 'Bea\u017fer x', 'Bearer \ud800', 'bearer\u0000x']
  for (const value of edges) t.equal(bearerToken(value), reference(value), JSON.stringify(value))
  // Random values from the characters at the rule's edges: letters of the scheme in both cases, their neighbours
  // by one bit, spaces, tabs, controls, non-ASCII.
  const alphabet = ['B', 'b', 'e', 'E', 'a', 'A', 'r', 'R', 'b'.toUpperCase(), '\u0062', 'x', ' ', ' ', '\t', '\n', '@', '`', '"', '\u00e9', '\u212a', '\ud83d', 'B\u0165', 'c', 'C', 'd', 's', 'S', 'Bearer', 'bearer', 'BEARER', 'Bearer ', 'Cearer ', 'Bdarer ', 'Beaser ', 'B\u00e5arer ']
  let seed = 42
  /** mulberry32: a seeded generator, so a failure reproduces. */
  const random = (n: number): number => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) % n
  }
  let tokens = 0
  for (let i = 0; i < 20_000; i++) {
    let value = ['Bearer ', 'bearer  ', 'BEARER ', 'Bearer', ''][random(5)] as string
    const parts = random(8)
    for (let p = 0; p < parts; p++) value += alphabet[random(alphabet.length)]
    const expected = reference(value)
    if (expected !== undefined) tokens++
    if (bearerToken(value) !== expected) t.fail(`differs on ${JSON.stringify(value)}`)
  }
  t.ok(tokens > 1000, `some generated values carry a token (${tokens})`)
})
