// CORS for browser callers (a dashboard, a browser-based agent). The API authenticates with bearer tokens and never
// with cookies, so a page of any origin can only act with a token it already holds: allowing every origin (the
// default) lends a browser nothing it could not do with fetch from a server. A deployment that wants to restrict it
// lists its origins.

export interface CorsPolicy {
  /** The Access-Control-Allow-Origin value for a request's Origin, or undefined when that origin is not allowed. */
  allowOrigin(origin: string): string | undefined
  /** True when the answer depends on Origin (a list of origins): caches must key on it. */
  readonly vary: boolean
  readonly allowHeaders: string
  readonly exposeHeaders: string
  readonly maxAgeSeconds: number
}

/**
 * Request headers a browser may send beyond the CORS-safelisted ones; `payment-signature` is the x402 v2 payment of
 * `/credit-score`, which a browser would otherwise refuse to send.
 */
export const CORS_ALLOW_HEADERS = 'authorization, content-type, idempotency-key, x-request-id, if-none-match, payment-signature'
/**
 * Response headers a browser script may read beyond the CORS-safelisted ones; `payment-required` (what a 402 asks
 * for) and `payment-response` (the settlement) are how an x402 client in a page pays `/credit-score`.
 */
export const CORS_EXPOSE_HEADERS = 'link, next-after, retry-after, ratelimit, ratelimit-policy, x-request-id, idempotent-replayed, www-authenticate, etag, allow, payment-required, payment-response'
export const CORS_MAX_AGE_SECONDS = 600

/** `['*']` any origin, `[]` none, otherwise exact origins such as `https://dashboard.example`. */
export function cors(origins: readonly string[]): CorsPolicy {
  const any = origins.includes('*')
  const allowed = new Set(origins.map((o) => o.toLowerCase()))
  return {
    allowOrigin: (origin) => (any ? '*' : allowed.has(origin.toLowerCase()) ? origin : undefined),
    vary: !any && allowed.size > 0,
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAgeSeconds: CORS_MAX_AGE_SECONDS,
  }
}

/** Parses the CORS_ORIGINS setting: `*`, empty (none), or origins separated by commas; each must be an origin. */
export function parseCorsOrigins(value: string): string[] {
  const origins = value.split(',').map((o) => o.trim()).filter((o) => o !== '')
  for (const origin of origins) {
    if (origin === '*') continue
    let parsed: URL
    try {
      parsed = new URL(origin)
    } catch {
      throw new RangeError(`not an origin: ${origin}`)
    }
    if (parsed.origin !== origin.replace(/\/$/, '') || !/^https?:$/.test(parsed.protocol)) throw new RangeError(`not an origin (scheme://host[:port]): ${origin}`)
  }
  return origins.map((o) => (o === '*' ? o : o.replace(/\/$/, '')))
}
