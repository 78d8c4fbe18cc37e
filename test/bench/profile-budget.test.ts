// bench/profile-budget.ts turns a service profile into the per-pair table of bench/HISTORY.md ("Where a pair's
// service-thread time goes"): each busy sample of the window goes to one part (the first whose test its stack passes),
// idle samples and samples outside the window count nowhere.
import t from 'tap'
import { budget, type Profile } from '../../bench/profile-budget.ts'

/** A profile whose nodes are the given stacks (root first, `function` or `function file://url` each) and whose samples are `[stack, µs]`. */
function profileOf(stacks: Record<string, string[]>, samples: Array<[string, number]>): Profile {
  const nodes: Profile['nodes'] = [{ id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] }]
  const leafOf = new Map<string, number>()
  for (const [name, frames] of Object.entries(stacks)) {
    let parent = nodes[0] as Profile['nodes'][number]
    for (const frame of frames) {
      const urlAt = frame.indexOf(' file://')
      const functionName = urlAt < 0 ? frame : frame.slice(0, urlAt)
      const url = urlAt < 0 ? '' : frame.slice(urlAt + 1)
      const node = { id: nodes.length + 1, callFrame: { functionName, url }, children: [] as number[] }
      nodes.push(node)
      parent.children?.push(node.id)
      parent = node
    }
    leafOf.set(name, parent.id)
  }
  let last = 0
  return {
    nodes,
    startTime: 0,
    samples: samples.map(([name]) => leafOf.get(name) as number),
    timeDeltas: samples.map(([, atMicros]) => {
      const delta = atMicros - last
      last = atMicros
      return delta
    }),
  }
}

const stacks = {
  idle: ['(idle)'],
  gc: ['(garbage collector)'],
  match: ['(anon) file:///app/src/http/pipeline.ts', 'matchOffer file:///app/src/engine/engine.ts', 'send file:///app/node_modules/xstate/dist/raise-9de11213.cjs.js'],
  matchOwn: ['(anon) file:///app/src/http/pipeline.ts', 'matchOffer file:///app/src/engine/engine.ts', 'walkBook file:///app/src/engine/matching.ts'],
  encode: ['executeTxnCallbacks file:///app/node_modules/lmdb/write.js', 'applyGroup file:///app/src/store/writes.ts', 'encode file:///app/src/store/structures-encoder.ts'],
  cork: ['(anon) file:///app/src/http/pipeline.ts', '(anon) file:///app/src/http/server.ts'],
}

t.test('each busy sample of the window goes to its part; idle ones and those outside count nowhere', async (t) => {
  const profile = profileOf(stacks, [
    ['match', 500_000], // before the window
    ['idle', 1_000_000], ['match', 1_100_000], ['matchOwn', 1_200_000], ['encode', 1_300_000], ['gc', 1_400_000],
    ['cork', 1_500_000], ['idle', 1_600_000],
    ['encode', 2_500_000], // after it
  ])
  const parts = budget(profile, 1, 2)
  t.same(parts.map((p) => p.part), [
    'engine: matchOffer', 'store group transaction: record encoding', 'garbage collector (main thread)', 'HTTP: uWS\'s native calls (cork: the send; end)',
  ])
  t.same(parts.map((p) => p.share), [0.4, 0.2, 0.2, 0.2], 'shares of the five busy samples')
  t.equal(parts[0]?.xstateShare, 0.5, 'one of the two matchOffer samples runs XState\'s code')
  t.equal(parts[1]?.xstateShare, 0)
})

t.test('a stack that passes several tests goes to the first part: the encoding inside lmdb-js is the encoding', async (t) => {
  const profile = profileOf({ encode: stacks.encode }, [['encode', 100]])
  t.same(budget(profile, 0, 1).map((p) => p.part), ['store group transaction: record encoding'])
})
