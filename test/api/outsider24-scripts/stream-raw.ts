// outsider24: /events as llms.txt says (a WebSocket with Authorization: Bearer), every frame validated against
// StreamMessage; and the plain GET that "describes it". node --import tsx test/api/outsider24-scripts/stream-raw.ts
import WebSocket from 'ws'
import { base, call, fresh, report, signIn, validate } from './doc.ts'

const a = await fresh(0n)
const token = await signIn(a)
const d = await call('GET', '/events', undefined, token)
console.log('plain GET /events:', d.status, JSON.stringify(d.body).slice(0, 300))
const ws = new WebSocket(base.replace('http', 'ws') + '/events', { headers: { authorization: `Bearer ${token}` } })
const first = await new Promise<any>((resolve, reject) => { ws.once('message', (m) => resolve(JSON.parse(String(m)))); ws.once('error', reject) })
console.log('first frame', JSON.stringify(first))
validate('StreamMessage', first, 'hello')
ws.close()
const bad = new WebSocket(base.replace('http', 'ws') + '/events?since=abc', { headers: { authorization: `Bearer ${token}` } })
bad.on('unexpected-response', (_req, res) => { let s = ''; res.on('data', (c) => { s += c }); res.on('end', () => console.log('since=abc:', res.statusCode, s.slice(0, 300))) })
bad.on('message', (m) => console.log('since=abc frame', String(m).slice(0, 300)))
await new Promise((r) => setTimeout(r, 1000))
bad.close()
report()
process.exit(0)
