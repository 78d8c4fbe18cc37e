// The inspector page: one self-contained HTML document (styles and script inline, Mermaid from this service), so a
// browser with no network beyond the service draws everything. The diagrams are the machines' own (the generator
// of machines/diagrams), with each state labelled by its live count; the system map is machines/diagrams/system.md's.
import type { AnyStateMachine } from 'xstate'
import { machines } from '../../machines/index.ts'
import { stateDiagramLines, systemMapLines } from '../tools/diagrams.ts'
import { machineStates } from './inspector.ts'
import type { ActorKind } from '../store/index.ts'

/** How often the page asks for counts and transitions while its live feed (GET /inspect/live) is closed. */
export const POLL_INTERVAL_MS = 2_000

let page: string | undefined

export function inspectorPage(): string {
  page ??= render()
  return page
}

function render(): string {
  const diagrams = Object.fromEntries(
    (Object.keys(machines) as ActorKind[]).map((kind) => [kind, { lines: stateDiagramLines(machines[kind] as AnyStateMachine), states: machineStates(kind) }]),
  )
  // JSON inside a script element: `<` escaped so no string in it can close the element.
  const data = JSON.stringify({ diagrams, systemMap: systemMapLines().join('\n'), pollMs: POLL_INTERVAL_MS }).replace(/</g, '\\u003c')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agent-credit inspector</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 1rem 2rem; color: #1a1a1a; }
  h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; }
  .machines { display: grid; grid-template-columns: repeat(auto-fill, minmax(28rem, 1fr)); gap: 1rem; }
  .machine { border: 1px solid #ccc; border-radius: 6px; padding: 0.5rem 1rem; }
  table { border-collapse: collapse; font-size: 0.9rem; } td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; }
  #feed { font-family: ui-monospace, monospace; font-size: 0.85rem; max-height: 20rem; overflow: auto; }
  pre { background: #f6f6f6; padding: 0.5rem; overflow: auto; max-height: 24rem; }
  .muted { color: #666; }
</style>
</head>
<body>
<h1>agent-credit inspector</h1>
<p class="muted">Read-only. Counts and transitions are those the service has made durable; updates: <span id="mode">polling</span>. <span id="updated"></span></p>
<h2>Machines: live actors per state</h2>
<div class="machines" id="machines"></div>
<h2>System map</h2>
<div id="system-map"></div>
<h2>Recent transitions</h2>
<ol id="feed"></ol>
<h2>Look up an actor</h2>
<form id="lookup"><input id="actor-id" placeholder="job_..., off_1, lse_1, adv_1" size="40" required> <button type="submit">Look up</button></form>
<div id="actor"></div>
<script src="/inspect/mermaid.js"></script>
<script id="inspector-data" type="application/json">${data}</script>
<script>
(() => {
  const data = JSON.parse(document.getElementById('inspector-data').textContent)
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' })
  let renders = 0
  const shown = {}
  const el = (tag, text, attrs) => {
    const node = document.createElement(tag)
    if (text !== undefined) node.textContent = text
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v)
    return node
  }
  const root = document.getElementById('machines')
  for (const [kind, d] of Object.entries(data.diagrams)) {
    const box = el('section', undefined, { class: 'machine', 'data-machine': kind })
    box.append(el('h3', kind))
    const table = el('table')
    const head = el('tr'); head.append(el('th', 'state'), el('th', 'live'))
    table.append(head)
    for (const state of d.states) {
      const row = el('tr'); row.append(el('td', state), el('td', '0', { 'data-count': kind + '.' + state }))
      table.append(row)
    }
    box.append(table, el('div', undefined, { id: 'diagram-' + kind }))
    root.append(box)
  }
  async function draw(target, source) {
    const { svg } = await mermaid.render('mermaid-' + (renders++), source)
    document.getElementById(target).innerHTML = svg
  }
  async function showCounts(counts) {
    for (const [kind, d] of Object.entries(data.diagrams)) {
      const states = counts[kind] || {}
      for (const state of d.states) document.querySelector('[data-count="' + kind + '.' + state + '"]').textContent = String(states[state] || 0)
      const key = JSON.stringify(states)
      if (shown[kind] === key) continue
      shown[kind] = key
      const labels = d.states.map((s) => '  state "' + s + ' (' + (states[s] || 0) + ')" as ' + s)
      await draw('diagram-' + kind, [d.lines[0], ...labels, ...d.lines.slice(1)].join('\\n'))
    }
  }
  let transitions = []
  function showFeed() {
    const feed = document.getElementById('feed')
    feed.replaceChildren(...transitions.map((t) => el('li', t.at + '  ' + t.kind + ' ' + t.id + ': ' + (t.from ?? '(new)') + ' -> ' + t.to + '  ' + t.event)))
  }
  const updated = (text) => { document.getElementById('updated').textContent = text }
  // Live over GET /inspect/live; while that feed is closed, polling the JSON routes, and reconnecting.
  let mode = 'polling'
  const setMode = (m) => { mode = m; document.body.setAttribute('data-feed', m); document.getElementById('mode').textContent = m === 'live' ? 'live' : 'polling every ' + data.pollMs / 1000 + ' s' }
  let queue = Promise.resolve()
  function connect() {
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/inspect/live')
    ws.onopen = () => setMode('live')
    ws.onmessage = (message) => {
      // One message at a time: a diagram drawn for an older message must not land after a newer one.
      queue = queue.then(async () => {
        const m = JSON.parse(message.data)
        transitions = (m.type === 'snapshot' ? m.transitions : [...m.transitions, ...transitions]).slice(0, 50)
        await showCounts(m.machines)
        showFeed()
        updated('Updated ' + new Date().toISOString() + '.')
      }).catch((error) => updated('Update failed: ' + error))
    }
    ws.onclose = () => { setMode('polling'); setTimeout(connect, 5000) }
  }
  async function poll() {
    if (mode === 'live') return
    try {
      await showCounts((await (await fetch('/inspect/counts')).json()).machines)
      transitions = (await (await fetch('/inspect/transitions?limit=50')).json()).transitions
      showFeed()
      updated('Updated ' + new Date().toISOString() + '.')
    } catch (error) {
      updated('Refresh failed: ' + error)
    }
  }
  document.getElementById('lookup').addEventListener('submit', async (event) => {
    event.preventDefault()
    const id = document.getElementById('actor-id').value.trim()
    const out = document.getElementById('actor')
    const answer = await fetch('/inspect/actors/' + encodeURIComponent(id))
    const body = await answer.json()
    if (!answer.ok) { out.replaceChildren(el('p', body.detail || body.title, { 'data-lookup': 'missing' })); return }
    const history = el('table', undefined, { id: 'history' })
    const head = el('tr'); head.append(el('th', 'at'), el('th', 'from'), el('th', 'to'), el('th', 'event'))
    history.append(head)
    for (const h of body.history) {
      const row = el('tr'); row.append(el('td', h.at), el('td', h.from ?? '(new)'), el('td', h.to), el('td', h.event))
      history.append(row)
    }
    out.replaceChildren(
      el('p', body.kind + ' ' + body.id + ' is ' + body.state + (body.final ? ' (final)' : ''), { 'data-lookup': body.id, 'data-state': body.state }),
      el('h3', 'History'), history, el('h3', 'Context'), el('pre', JSON.stringify(body.context, null, 2)),
    )
  })
  draw('system-map', data.systemMap).catch((error) => { document.getElementById('system-map').textContent = String(error) })
  setMode('polling')
  poll()
  connect()
  setInterval(poll, data.pollMs)
})()
</script>
</body>
</html>
`
}
