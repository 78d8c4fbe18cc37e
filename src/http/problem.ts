// Errors as RFC 9457 problem details. A handler throws `HttpProblem`; the server turns it into an
// `application/problem+json` response. The `code` is the stable part programs rely on; titles may be reworded.

export interface ValidationIssue {
  path: string
  message: string
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  code: string
  errors?: ValidationIssue[]
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

/** The problem `type` URI of a code: not dereferenceable, stable, and documented in the README. */
export function problemType(code: string): string {
  return `urn:agent-credit:problem:${code}`
}

/** Titles of the codes the transport and authorization raise themselves. Domain codes bring their own title. */
export const PROBLEM_TITLES: Readonly<Record<string, string>> = {
  malformed_json: 'Malformed JSON',
  validation_failed: 'Request validation failed',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal_error: 'Internal error',
  shutting_down: 'Service shutting down',
  conflict: 'Conflict',
  unprocessable: 'Unprocessable',
}

export interface HttpProblemOptions {
  title?: string
  errors?: ValidationIssue[]
  /** Extra response headers, e.g. `Allow` on a 405 or `Retry-After` on a 429. */
  headers?: Record<string, string>
  cause?: unknown
}

/** A failure a handler (or the transport) reports to the client with a given status and stable code. */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem'
  readonly status: number
  readonly code: string
  readonly title: string
  readonly detail: string
  readonly errors: ValidationIssue[] | undefined
  readonly headers: Record<string, string> | undefined

  constructor(status: number, code: string, detail: string, options: HttpProblemOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause })
    if (!Number.isInteger(status) || status < 400 || status > 599) throw new RangeError(`problem status must be 4xx or 5xx: ${status}`)
    if (!/^[a-z][a-z0-9_]*$/.test(code)) throw new RangeError(`problem code must be snake_case: ${code}`)
    this.status = status
    this.code = code
    this.title = options.title ?? PROBLEM_TITLES[code] ?? code.replace(/_/g, ' ')
    this.detail = detail
    this.errors = options.errors
    this.headers = options.headers
  }

  toBody(): ProblemBody {
    const body: ProblemBody = { type: problemType(this.code), title: this.title, status: this.status, detail: this.detail, code: this.code }
    if (this.errors !== undefined) body.errors = this.errors
    return body
  }
}

export const badRequest = (detail: string, code = 'bad_request') => new HttpProblem(400, code, detail, { title: 'Bad request' })
export const unauthorized = (detail: string, code = 'unauthorized') => new HttpProblem(401, code, detail, { title: 'Unauthorized', headers: { 'www-authenticate': 'Bearer' } })
export const forbidden = (detail: string, code = 'forbidden') => new HttpProblem(403, code, detail, { title: 'Forbidden' })
export const notFound = (detail: string, code = 'not_found') => new HttpProblem(404, code, detail, { title: 'Not found' })
export const conflict = (detail: string, code = 'conflict') => new HttpProblem(409, code, detail, { title: 'Conflict' })
export const unprocessable = (detail: string, code = 'unprocessable') => new HttpProblem(422, code, detail, { title: 'Unprocessable' })
