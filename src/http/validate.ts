// Compiled request validators and the mapping of TypeBox errors to `errors: [{path, message}]`.
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import type { ValidationIssue } from './problem.ts'

/** Upper bound on the issues reported for one request part: a hostile body cannot make the answer huge. */
export const MAX_VALIDATION_ISSUES = 20

export interface CompiledSchema {
  check(value: unknown): boolean
  /** Issues with paths prefixed by `prefix` (`/body`, `/params`, `/query`). */
  issues(value: unknown, prefix: string): ValidationIssue[]
}

export function compileSchema(schema: TSchema): CompiledSchema {
  const validator = Compile(schema)
  return {
    check: (value) => validator.Check(value),
    issues: (value, prefix) => toIssues(validator.Errors(value), prefix),
  }
}

interface RawError {
  keyword: string
  schemaPath: string
  instancePath: string
  params: object
  message: string
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1')
}

function toIssues(errors: readonly RawError[], prefix: string): ValidationIssue[] {
  const issues: ValidationIssue[] = []
  const seen = new Set<string>()
  const add = (path: string, message: string) => {
    const key = `${path}\u0000${message}`
    if (seen.has(key) || issues.length >= MAX_VALIDATION_ISSUES) return
    seen.add(key)
    issues.push({ path, message })
  }
  // A failed union reports each branch and then itself; keep only the union, naming the constants when it is an enum.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
  const branchOf = (error: RawError) => unions.find((u) => error !== u && (error.schemaPath.startsWith(`${u.schemaPath}/anyOf/`) || error.schemaPath.startsWith(`${u.schemaPath}/oneOf/`)))
  for (const error of errors) {
    if (branchOf(error) !== undefined) continue
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      const branches = errors.filter((e) => e.schemaPath.startsWith(`${error.schemaPath}/${error.keyword}/`))
      const constants = branches.every((e) => e.keyword === 'const') ? branches.map((e) => JSON.stringify((e.params as { allowedValue?: unknown }).allowedValue)) : []
      add(`${prefix}${error.instancePath}`, constants.length > 0 ? `must be one of ${constants.join(', ')}` : error.message)
      continue
    }
    // An unknown field is reported twice by TypeBox (the `false` sub-schema and the object); report it once, at
    // the field itself.
    if (error.keyword === 'boolean' && error.schemaPath.endsWith('/additionalProperties')) continue
    if (error.keyword === 'additionalProperties') {
      const names = (error.params as { additionalProperties?: string[] }).additionalProperties ?? []
      for (const name of names) add(`${prefix}${error.instancePath}/${escapePointer(name)}`, 'unknown field')
      continue
    }
    if (error.keyword === 'required') {
      const names = (error.params as { requiredProperties?: string[] }).requiredProperties ?? []
      for (const name of names) add(`${prefix}${error.instancePath}/${escapePointer(name)}`, 'required field missing')
      continue
    }
    add(`${prefix}${error.instancePath}`, error.message)
  }
  if (issues.length === 0) add(prefix, 'invalid')
  return issues
}
