// A service-thread CPU profile (`BENCH_SERVICE_CPU_PROF`, bench/loadmix.ts) cut into the parts of a request + match
// pair (bench/HISTORY.md, "Where a pair's service-thread time goes"). Without a window it prints each second's share of busy
// samples and of samples in matchOffer, which shows where the load mix's windows lie (the saturated one follows its
// warm-up); with one it gives each part's share of the window's busy samples and, given the run's service-thread CPU
// per pair, its microseconds per pair, and how much of each part is XState's own code. A sample goes to the first
// part whose test its stack passes (the list's order is the priority).
//   node --import tsx bench/profile-budget.ts <file.cpuprofile> [fromSeconds toSeconds [microsPerPair]]
import { readFileSync } from 'node:fs'
import { isMainModule } from '../src/tools/main-module.ts'

export interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string }
  children?: number[]
}
export interface Profile {
  nodes: ProfileNode[]
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

/** A stack as `function file` keys, the leaf first. */
export type Stack = readonly string[]
const any = (stack: Stack, test: (frame: string) => boolean): boolean => stack.some(test)
const inGroupTransaction = (stack: Stack): boolean => any(stack, (f) => f.includes('lmdb/write.js') || f.startsWith('applyGroup '))

/** The parts, in priority order. */
const PARTS: ReadonlyArray<readonly [string, (stack: Stack) => boolean]> = [
  ['idle', (s) => s[0] === '(idle) '],
  ['garbage collector (main thread)', (s) => s[0] === '(garbage collector) '],
  ['V8 and native code outside JavaScript ("(program)")', (s) => s[0] === '(program) '],
  ['store group transaction: record encoding', (s) => inGroupTransaction(s) && any(s, (f) => f.includes('structures-encoder'))],
  ['store group transaction: LMDB puts', (s) => any(s, (f) => /^(put|putSync|writeInstructions) lmdb/.test(f))],
  ['store: the commit\'s checks and staging, in the command (prepareCommit)', (s) => any(s, (f) => f.startsWith('commit store/store') || f.startsWith('#prepare store'))],
  ['store group transaction: lmdb-js and the group\'s bookkeeping', (s) => any(s, (f) => f.includes('lmdb/') || f.includes('store/writes') || f.startsWith('applyGroup '))],
  ['response encoding (compiled writers)', (s) => any(s, (f) => f.includes('api/serializers'))],
  ['durable feed and event stream', (s) => any(s, (f) => f.includes('durable-feed') || f.includes('stream/'))],
  ['ticker: lease time-outs, offer expiries (Engine.tick)', (s) => any(s, (f) => f.startsWith('tick engine/engine'))],
  ['ticker: its own (periodic, run)', (s) => any(s, (f) => f.includes('service/periodic') || f.startsWith('tick service'))],
  ['follower batch: chain time\'s time-outs and expiries (observeChain)', (s) => any(s, (f) => f.startsWith('observeChain'))],
  ['engine: requestCredit', (s) => any(s, (f) => f.startsWith('requestCredit engine/engine'))],
  ['engine: matchOffer', (s) => any(s, (f) => f.startsWith('matchOffer engine/engine'))],
  ['sessions (auth)', (s) => any(s, (f) => f.includes('auth/'))],
  ['chain pollers (follower, watcher: JSON-RPC over node:http)', (s) => any(s, (f) => f.includes('chain/') || f.includes('viem') || f.includes('_http_') || f.includes('utils/buildRequest'))],
  ['service and route code (handlers, run, apply, idempotency)', (s) => /service\/|routes\/|api\//.test(s[0] as string)],
  ['HTTP: uWS\'s native calls (cork: the send; end)', (s) => (s[0] as string).includes('http/server.ts')],
  ['HTTP: body validation (TypeBox, duplicate keys)', (s) => any(s, (f) => f.includes('typebox') || f.startsWith('check_') || f.includes('http/json.ts'))],
  ['HTTP: the pipeline (parse, route, headers, rate limit)', (s) => any(s, (f) => f.includes('http/'))],
  ['promises and timers', (s) => any(s, (f) => f.includes('runMicrotasks') || f.includes('task_queues') || f.includes('timers'))],
  ['other', () => true],
]
const isXState = (frame: string): boolean => /dist\/(raise|StateMachine|assign|xstate)/.test(frame)

/** A profile's samples as stacks with their time, seconds from its start. */
export function samplesOf(profile: Profile): Array<{ atSeconds: number; stack: Stack }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parentOf = new Map<number, number>()
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id)
  const keyOf = (n: ProfileNode): string => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}`
  let clock = profile.startTime
  return profile.samples.map((id, i) => {
    clock += profile.timeDeltas[i] as number
    const stack: string[] = []
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) stack.push(keyOf(byId.get(at) as ProfileNode))
    return { atSeconds: (clock - profile.startTime) / 1e6, stack }
  })
}

export interface PartShare {
  part: string
  /** Of the window's busy (not idle) samples. */
  share: number
  /** Of the part's samples, those with XState's code on the stack. */
  xstateShare: number
}

/** Each part's share of the busy samples in [fromSeconds, toSeconds), largest first. */
export function budget(profile: Profile, fromSeconds: number, toSeconds: number): PartShare[] {
  const counts = new Map<string, { samples: number; xstate: number }>()
  let busy = 0
  for (const { atSeconds, stack } of samplesOf(profile)) {
    if (atSeconds < fromSeconds || atSeconds >= toSeconds) continue
    const [part] = PARTS.find(([, test]) => test(stack)) as readonly [string, unknown]
    if (part === 'idle') continue
    busy++
    const entry = counts.get(part) ?? { samples: 0, xstate: 0 }
    entry.samples++
    if (any(stack, isXState)) entry.xstate++
    counts.set(part, entry)
  }
  return [...counts]
    .map(([part, { samples, xstate }]) => ({ part, share: samples / busy, xstateShare: xstate / samples }))
    .sort((a, b) => b.share - a.share)
}

function main(args: readonly string[]): void {
  const [file, fromArg, toArg, perPairArg] = args
  if (file === undefined) throw new Error('usage: profile-budget.ts <file.cpuprofile> [fromSeconds toSeconds [microsPerPair]]')
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  if (fromArg === undefined) {
    // The set-up (registrations, sign-ins) keeps the thread busy too: the load mix's windows are the seconds that match.
    const perSecond = new Map<number, { all: number; busy: number; matching: number }>()
    for (const { atSeconds, stack } of samplesOf(profile)) {
      const second = Math.floor(atSeconds)
      const entry = perSecond.get(second) ?? { all: 0, busy: 0, matching: 0 }
      entry.all++
      if (stack[0] !== '(idle) ') entry.busy++
      if (any(stack, (f) => f.startsWith('matchOffer engine/engine'))) entry.matching++
      perSecond.set(second, entry)
    }
    for (const [second, { all, busy, matching }] of perSecond) console.log(`${second}s busy ${(busy / all).toFixed(2)}, in matchOffer ${(matching / all).toFixed(2)}`)
    return
  }
  const perPair = perPairArg === undefined ? undefined : Number(perPairArg)
  console.log(`${fromArg}-${toArg}s${perPair === undefined ? '' : `, ${perPair} µs of service thread per pair`}`)
  console.log('| part | share of busy | µs per pair | XState\'s part |')
  console.log('|---|---|---|---|')
  for (const { part, share, xstateShare } of budget(profile, Number(fromArg), Number(toArg))) {
    const micros = perPair === undefined ? '' : (share * perPair).toFixed(0)
    console.log(`| ${part} | ${(100 * share).toFixed(1)} % | ${micros} | ${xstateShare === 0 ? '' : `${(100 * xstateShare).toFixed(0)} %`} |`)
  }
}

if (isMainModule(import.meta.url)) main(process.argv.slice(2))
