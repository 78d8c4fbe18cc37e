// outsider24: every example /openapi.json gives (schema `examples`, media `example`/`examples`, parameter examples)
// validated against the schema it illustrates; an example its own schema refuses does not run verbatim.
// node --import tsx test/api/outsider24-scripts/examples.ts
import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { base } from './doc.ts'

const doc = await (await fetch(`${base}/openapi.json`)).json() as any
const ajv = new (Ajv2020 as any).default({ strict: false, allErrors: true })
;(addFormats as any).default(ajv)
ajv.addSchema({ $id: 'doc', components: doc.components })
const rewrite = (s: any): any => Array.isArray(s) ? s.map(rewrite) : s && typeof s === 'object' ? Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? 'doc' + v : rewrite(v)])) : s
let checked = 0, bad = 0
function check(where: string, schema: any, value: unknown) {
  checked++
  const v = ajv.compile(rewrite(schema))
  if (!v(value)) { bad++; console.log(`FINDING: ${where}: example ${JSON.stringify(value).slice(0, 200)} refused: ${JSON.stringify(v.errors.slice(0, 2))}`) }
}
function walk(where: string, schema: any) {
  if (!schema || typeof schema !== 'object') return
  if (Array.isArray(schema.examples) && !schema.$ref) for (const e of schema.examples) check(where, schema, e)
  for (const [k, v] of Object.entries(schema)) if (k !== 'examples' && typeof v === 'object') walk(`${where}/${k}`, v)
}
for (const [name, s] of Object.entries<any>(doc.components.schemas)) walk(`#/components/schemas/${name}`, s)
for (const [path, ops] of Object.entries<any>(doc.paths)) for (const [m, op] of Object.entries<any>(ops)) {
  if (typeof op !== 'object' || !op) continue
  for (const p of op.parameters ?? []) { const pp = p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p; if (pp.example !== undefined) check(`${m} ${path} ${pp.name}`, pp.schema, pp.example); for (const e of Object.values<any>(pp.examples ?? {})) check(`${m} ${path} ${pp.name}`, pp.schema, e.value) }
  const media = op.requestBody?.content ? Object.values<any>(op.requestBody.content) : []
  for (const md of media) { if (md.example !== undefined) check(`${m} ${path} body`, md.schema, md.example); for (const e of Object.values<any>(md.examples ?? {})) check(`${m} ${path} body`, md.schema, e.value) }
  for (const [st, r] of Object.entries<any>(op.responses ?? {})) for (const md of Object.values<any>(r.content ?? {})) { if (md.example !== undefined) check(`${m} ${path} ${st}`, md.schema, md.example); for (const e of Object.values<any>(md.examples ?? {})) check(`${m} ${path} ${st}`, md.schema, e.value) }
}
console.log(`${checked} examples checked, ${bad} refused by their own schema`)
