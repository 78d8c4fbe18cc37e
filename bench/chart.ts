// SVG charts for the bench results, written by hand (no dependency): bars with a value label each, or lines over a
// logarithmic x axis, with axes, ticks, a title, axis labels and an optional dashed goal line. Plain SVG 1.1 that a
// browser and GitHub render as an image.

export interface Bar { label: string; value: number }
export interface Series { name: string; points: Array<[number, number]> }
export interface Goal { value: number; label: string }

const W = 640
const H = 360
const M = { left: 72, right: 20, top: 44, bottom: 64 }
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1']

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A round step giving about `count` ticks from 0 to max. */
function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1]
  const raw = max / count
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  const step = ([1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw) as number
  const out: number[] = []
  for (let v = 0; v <= max * 1.0001 + step; v += step) {
    out.push(Number(v.toPrecision(12)))
    if (v >= max) break
  }
  return out
}

export function formatNumber(v: number): string {
  if (Math.abs(v) >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`
  if (Math.abs(v) >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`
  return String(Number(v.toPrecision(4)))
}

function frame(title: string, xLabel: string, yLabel: string, yTicks: number[], y: (v: number) => number, body: string): string {
  const grid = yTicks.map((t) => `<line x1="${M.left}" x2="${W - M.right}" y1="${y(t)}" y2="${y(t)}" stroke="#ddd"/><text x="${M.left - 6}" y="${y(t) + 4}" text-anchor="end">${formatNumber(t)}</text>`).join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">
<rect width="${W}" height="${H}" fill="#fff"/>
<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>
${grid}
<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#333"/>
<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#333"/>
<text x="16" y="${(M.top + H - M.bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(M.top + H - M.bottom) / 2})">${esc(yLabel)}</text>
<text x="${(M.left + W - M.right) / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>
${body}
</svg>
`
}

function goalLine(goal: Goal | undefined, y: (v: number) => number): string {
  if (goal === undefined) return ''
  return `<line x1="${M.left}" x2="${W - M.right}" y1="${y(goal.value)}" y2="${y(goal.value)}" stroke="#c00" stroke-dasharray="6 4"/><text x="${W - M.right - 4}" y="${y(goal.value) - 5}" text-anchor="end" fill="#c00">${esc(goal.label)}</text>`
}

export function barChart(options: { title: string; xLabel?: string; yLabel: string; bars: Bar[]; goal?: Goal }): string {
  const bars = options.bars.filter((b) => Number.isFinite(b.value))
  const max = Math.max(1e-9, ...bars.map((b) => b.value), options.goal?.value ?? 0)
  const yTicks = ticks(max)
  const top = yTicks.at(-1) as number
  const y = (v: number) => Math.round((H - M.bottom - ((H - M.bottom - M.top) * v) / top) * 10) / 10
  const slot = (W - M.left - M.right) / Math.max(1, bars.length)
  const width = Math.min(80, slot * 0.6)
  const body = bars.map((b, i) => {
    const x = M.left + slot * i + (slot - width) / 2
    return `<rect x="${x}" y="${y(b.value)}" width="${width}" height="${Math.max(0, H - M.bottom - y(b.value))}" fill="${COLORS[i % COLORS.length]}"><title>${esc(b.label)}: ${b.value}</title></rect>` +
      `<text x="${x + width / 2}" y="${y(b.value) - 4}" text-anchor="middle">${formatNumber(b.value)}</text>` +
      `<text x="${x + width / 2}" y="${H - M.bottom + 16}" text-anchor="middle">${esc(b.label)}</text>`
  }).join('\n')
  return frame(options.title, options.xLabel ?? '', options.yLabel, yTicks, y, body + goalLine(options.goal, y))
}

/** Lines over a logarithmic x axis (sizes growing tenfold), one per series, each point marked and labelled. */
export function lineChart(options: { title: string; xLabel: string; yLabel: string; series: Series[]; goal?: Goal }): string {
  const xs = options.series.flatMap((s) => s.points.map(([x]) => x)).filter((x) => x > 0)
  const ys = options.series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite)
  const lo = Math.log10(Math.min(...xs))
  const hi = Math.log10(Math.max(...xs))
  const span = hi - lo || 1
  const x = (v: number) => Math.round((M.left + 30 + ((W - M.left - M.right - 60) * (Math.log10(v) - lo)) / span) * 10) / 10
  const yTicks = ticks(Math.max(1e-9, ...ys, options.goal?.value ?? 0))
  const top = yTicks.at(-1) as number
  const y = (v: number) => Math.round((H - M.bottom - ((H - M.bottom - M.top) * v) / top) * 10) / 10
  const xTicks = [...new Set(xs)].sort((a, b) => a - b).map((v) => `<line x1="${x(v)}" x2="${x(v)}" y1="${H - M.bottom}" y2="${H - M.bottom + 4}" stroke="#333"/><text x="${x(v)}" y="${H - M.bottom + 16}" text-anchor="middle">${formatNumber(v)}</text>`).join('')
  const lines = options.series.map((s, i) => {
    const color = COLORS[i % COLORS.length]
    const pts = s.points.filter(([px, py]) => px > 0 && Number.isFinite(py)).sort((a, b) => a[0] - b[0])
    return `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([px, py]) => `${x(px)},${y(py)}`).join(' ')}"/>` +
      pts.map(([px, py]) => `<circle cx="${x(px)}" cy="${y(py)}" r="3.5" fill="${color}"/><text x="${x(px)}" y="${y(py) - 7}" text-anchor="middle">${formatNumber(py)}</text>`).join('') +
      `<rect x="${M.left + 10}" y="${M.top + 4 + 16 * i}" width="10" height="10" fill="${color}"/><text x="${M.left + 24}" y="${M.top + 13 + 16 * i}">${esc(s.name)}</text>`
  }).join('\n')
  return frame(options.title, options.xLabel, options.yLabel, yTicks, y, xTicks + lines + goalLine(options.goal, y))
}
