// An outsider with a session against what the stream's numbers tell it of other wallets: sequence numbers drawn from
// one counter over every wallet let any signed-in stranger count the service's events (how busy it and its agents
// are) from its hello and its own events' seq alone. Each wallet's events are now numbered on their own (1, 2, 3, ...):
// a stranger's hello says 0 whatever others do, an event of two wallets carries each one's own seq, and a resume is
// still exact from every position, across the ring's evictions, with the numbering going on after them.
import t from 'tap'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import type { Address } from 'viem'
import type { Change } from '../../src/engine/types.ts'
import { signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { events, openRawStream, resumeStream, type RawStream } from './fixtures.ts'

const RETAINED = 200

let h: Harness
t.before(async () => {
  h = await startHarness({ stream: { retainedEventsMax: RETAINED } })
})
t.teardown(() => h.stop())

let jobs = 0
/** An event of a job whose borrower and client are `borrower` and `client` (only what the hub routes by: not a whole job view). */
function job(borrower: Address, client: Address): Change {
  const jobId = `job_ps_${++jobs}`
  return { kind: 'job', id: jobId, record: { value: 'funded', context: { jobId, borrower, client } }, final: false }
}
const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address
/** Publishes `count` events between strangers. */
function othersBusy(count: number): void {
  for (let i = 0; i < count; i++) h.app.stream.publish([job(fresh(), fresh())])
}

async function wallet(): Promise<{ address: Address; token: string }> {
  const account = privateKeyToAccount(generatePrivateKey())
  return { address: account.address, token: (await signedIn(h.url, account)).token as string }
}

async function hello(token: string, query = ''): Promise<{ stream: RawStream; hello: any }> {
  const stream = await openRawStream(h.url, token, query)
  return { stream, hello: await stream.next((m) => m.type === 'hello', 'hello') }
}

async function helloOnly(token: string): Promise<any> {
  const { stream, hello: message } = await hello(token)
  await stream.close()
  return message
}

const resume = (token: string, since: number, epoch: string, expected: number) => resumeStream(h.url, token, since, epoch, expected)

t.test('a stranger\'s hello and events count its own events only, however busy the others are', async (t) => {
  const stranger = await wallet()
  othersBusy(150)
  const first = await hello(stranger.token)
  t.equal(first.hello.seq, 0, 'after 150 events of others, the stranger\'s hello says 0')
  t.equal(first.hello.oldestSeq, 1)
  const other = fresh()
  for (let i = 0; i < 3; i++) {
    othersBusy(40)
    h.app.stream.publish([job(stranger.address, other)])
  }
  await first.stream.until(() => events(first.stream).length === 3, 'its 3 events')
  t.same(events(first.stream).map((m) => m.seq), [1, 2, 3], 'its events are numbered 1, 2, 3 whatever came between')
  othersBusy(50)
  const second = await hello(stranger.token)
  t.same({ seq: second.hello.seq, oldestSeq: second.hello.oldestSeq }, { seq: 3, oldestSeq: 1 }, 'a later hello: its own latest and oldest, not the others\' 320')
  const other2 = await hello((await wallet()).token)
  t.equal(other2.hello.seq, 0, 'a fresh wallet\'s hello says 0 too')
  await Promise.all([first.stream.close(), second.stream.close(), other2.stream.close()])
})

t.test('an event of two wallets carries each one\'s own seq; a resume is exact from every position', async (t) => {
  const [a, b] = [await wallet(), await wallet()]
  const liveA = await hello(a.token)
  const liveB = await hello(b.token)
  // a alone, both, b alone, both, with strangers' events between.
  const plan: Array<[Address, Address]> = [[a.address, fresh()], [a.address, b.address], [fresh(), b.address], [fresh(), b.address], [b.address, a.address], [a.address, fresh()]]
  for (const [borrower, client] of plan) {
    othersBusy(7)
    h.app.stream.publish([job(borrower, client)])
  }
  const countA = plan.filter((p) => p.includes(a.address)).length
  const countB = plan.filter((p) => p.includes(b.address)).length
  await liveA.stream.until(() => events(liveA.stream).length === countA, 'a\'s events')
  await liveB.stream.until(() => events(liveB.stream).length === countB, 'b\'s events')
  const seqsOf = (s: RawStream) => events(s).map((m) => m.seq)
  t.same(seqsOf(liveA.stream), [1, 2, 3, 4], 'a\'s numbering')
  t.same(seqsOf(liveB.stream), [1, 2, 3, 4], 'b\'s numbering')
  const shared = (s: RawStream) => events(s).filter((m) => m.job.borrower !== undefined && [a.address, b.address].every((w) => [m.job.borrower, m.job.client].includes(w)))
  t.same(shared(liveA.stream).map((m) => m.job.jobId), shared(liveB.stream).map((m) => m.job.jobId), 'both got the shared events')
  t.same(shared(liveA.stream).map((m) => m.seq), [2, 3], 'each under a\'s numbers')
  t.same(shared(liveB.stream).map((m) => m.seq), [1, 4], 'and b\'s own')
  const epoch = liveA.hello.epoch as string
  for (const [who, live] of [[a, liveA], [b, liveB]] as const) {
    const all = events(live.stream)
    for (let since = 0; since <= all.length; since++) {
      const got = await resume(who.token, since, epoch, all.length - since)
      t.equal(got.resync, undefined, `from ${since}: no resync`)
      t.same(got.events, all.slice(since), `from ${since}: exactly the wallet's events after it, as live delivery sent them`)
    }
    const ahead = await resume(who.token, all.length + 1, epoch, 0)
    t.match(ahead.resync, { reason: 'ahead_of_stream', seq: all.length }, 'a seq the wallet was never sent: resync at its own latest')
  }
  await Promise.all([liveA.stream.close(), liveB.stream.close()])
})

t.test('after the ring dropped a wallet\'s events, its numbering goes on and resumes stay exact', async (t) => {
  const a = await wallet()
  const opened = await hello(a.token)
  const epoch = opened.hello.epoch as string
  await opened.stream.close()
  for (let i = 0; i < 5; i++) {
    h.app.stream.publish([job(a.address, fresh())])
    othersBusy(60)
  }
  const partly = await helloOnly(a.token)
  t.equal(partly.seq, 5)
  t.ok(partly.oldestSeq > 1 && partly.oldestSeq <= 5, `its oldest events left the ring (oldest retained ${partly.oldestSeq})`)
  const retained = await resume(a.token, partly.oldestSeq - 1, epoch, 5 - partly.oldestSeq + 1)
  t.same(retained.events.map((m) => m.seq), Array.from({ length: 5 - partly.oldestSeq + 1 }, (_, i) => partly.oldestSeq + i), 'from the retention\'s start: the retained ones')
  t.match((await resume(a.token, partly.oldestSeq - 2, epoch, 0)).resync, { reason: 'beyond_retention', seq: 5 }, 'before it: resync')
  othersBusy(RETAINED)
  const none = await helloOnly(a.token)
  t.same({ seq: none.seq, oldestSeq: none.oldestSeq }, { seq: 5, oldestSeq: 6 }, 'none retained: its latest stays 5')
  t.same((await resume(a.token, 5, epoch, 0)).events, [], 'a resume from its latest: nothing missed')
  t.match((await resume(a.token, 4, epoch, 0)).resync, { reason: 'beyond_retention' }, 'from before it: resync')
  h.app.stream.publish([job(fresh(), a.address)])
  const next = await resume(a.token, 5, epoch, 1)
  t.same(next.events.map((m) => m.seq), [6], 'its next event is 6, not 1 again')
})
