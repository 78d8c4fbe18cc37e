// One client, as the service counts clients: its address (what a trusted proxy forwarded, or the peer), an IPv6 one
// by its /64.

/**
 * The key one client is counted on (RouteContext.clientKey), by the rate limiter (anonymous requests), the store
 * budgets (src/http/rate-limit.ts StoreBudget) and the bound on waiting lender registrations (src/service/lenders.ts):
 * the client's address (the socket's peer, the front's PROXY header, or what a trusted proxy forwarded), except that
 * an IPv6 address counts by its /64. One subscriber,
 * and any rented server, gets a whole /64: counted by address, one host would have 2^64 clients. An IPv4-mapped IPv6
 * address counts as its IPv4 address. Anything that does not parse as an address is its own key.
 */
export function clientKeyOf(clientIp: string): string {
  if (!clientIp.includes(':')) return clientIp
  const address = clientIp.split('%')[0] as string
  const halves = address.split('::')
  if (halves.length > 2) return clientIp
  const groupsOf = (part: string): string[] => (part === '' ? [] : part.split(':'))
  const head = groupsOf(halves[0] as string)
  const tail = groupsOf(halves[1] ?? '')
  const last = tail.length > 0 ? tail : head
  const dotted = last.at(-1)
  if (dotted?.includes('.') === true) {
    const octets = dotted.split('.').map(Number)
    if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) return clientIp
    last.splice(-1, 1, ((octets[0] as number) * 256 + (octets[1] as number)).toString(16), ((octets[2] as number) * 256 + (octets[3] as number)).toString(16))
  }
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return clientIp
  const groups = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...tail]
  if (groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return clientIp
  const words = groups.map((g) => parseInt(g, 16))
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    return [(words[6] as number) >> 8, (words[6] as number) & 255, (words[7] as number) >> 8, (words[7] as number) & 255].join('.')
  }
  return `${words.slice(0, 4).map((w) => w.toString(16)).join(':')}::/64`
}

/**
 * The client address a request is counted on. Without trusted proxies it is the socket's peer. When the peer is
 * a trusted proxy, it is the right-most X-Forwarded-For entry that is not itself a trusted proxy (what the
 * outermost trusted proxy saw), so that a client cannot pick its own bucket by sending the header itself.
 */
export function clientAddress(peer: string, forwardedFor: string, trustedProxies: ReadonlySet<string>): string {
  if (trustedProxies.size === 0 || forwardedFor === '' || !trustedProxies.has(peer)) return peer
  const hops = forwardedFor.split(',')
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = (hops[index] as string).trim()
    if (hop === '') continue
    if (!trustedProxies.has(hop)) return hop
  }
  return peer
}
