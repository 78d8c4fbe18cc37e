// The representations of an immutable document (OpenAPI, catalog, llms.txt): identity, gzip and br, each with its
// own strong ETag, computed once per process. Compression runs on libuv's thread pool, so building them never
// blocks the event loop.
import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/** Reused for 5 minutes, then revalidated with If-None-Match (a 304 costs a few headers). */
export const DOCUMENT_CACHE_CONTROL = 'public, max-age=300'
/**
 * A document the service will build again once it knows more (the catalog while a network's reclaimDelay() is not
 * read yet): revalidated at each use, so no cache keeps the incomplete one for DOCUMENT_CACHE_CONTROL's 5 minutes.
 */
export const PROVISIONAL_DOCUMENT_CACHE_CONTROL = 'public, no-cache'

export interface DocumentVariant {
  encoding: 'identity' | 'gzip' | 'br'
  body: Buffer
  etag: string
}

export interface DocumentVariants {
  identity: DocumentVariant
  gzip: DocumentVariant
  br: DocumentVariant
  /** The headers of the 200 answer (content-type and the route's own). */
  headers: Array<[string, string]>
  cacheControl: string
}

/** `headers` may carry the route's own cache-control (PROVISIONAL_DOCUMENT_CACHE_CONTROL): it replaces the default. */
export async function documentVariants(body: string | Buffer, headers: Array<[string, string]>): Promise<DocumentVariants> {
  const own = headers.find(([name]) => name.toLowerCase() === 'cache-control')
  const rest = own === undefined ? headers : headers.filter((header) => header !== own)
  const identity = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')
  const hash = createHash('sha256').update(identity).digest('base64url').slice(0, 27)
  const [gzipped, brotli] = await Promise.all([
    gzipAsync(identity, { level: 9 }),
    brotliAsync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }),
  ])
  return {
    // Strong validators differ between content codings of the same document (RFC 9110 section 8.8.1).
    identity: { encoding: 'identity', body: identity, etag: `"${hash}"` },
    gzip: { encoding: 'gzip', body: gzipped, etag: `"${hash}-gzip"` },
    br: { encoding: 'br', body: brotli, etag: `"${hash}-br"` },
    headers: rest,
    cacheControl: own?.[1] ?? DOCUMENT_CACHE_CONTROL,
  }
}

/** q-value of a coding in Accept-Encoding (`*` counts for codings not named); 0 when refused or absent. */
function quality(acceptEncoding: string, coding: string): number {
  let wildcard = 0
  for (const part of acceptEncoding.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';')
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    if (!Number.isFinite(q)) continue
    if (name.trim() === coding) return q
    if (name.trim() === '*') wildcard = q
  }
  return wildcard
}

/** br when accepted, else gzip, else the identity; the smallest of what the client takes. */
export function selectVariant(variants: DocumentVariants, acceptEncoding: string): DocumentVariant {
  if (acceptEncoding === '') return variants.identity
  if (quality(acceptEncoding, 'br') > 0 && variants.br.body.length < variants.identity.body.length) return variants.br
  if (quality(acceptEncoding, 'gzip') > 0 && variants.gzip.body.length < variants.identity.body.length) return variants.gzip
  return variants.identity
}
