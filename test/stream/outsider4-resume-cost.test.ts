// An outsider against the event stream's resume: any signed-in wallet may resume from the oldest retained event as
// often as it likes, and a resume used to read every slot of the ring (100,000 by default: 4 to 6 ms of the service
// thread each, measured) to find the wallet's few events. A resume now reads the wallet's own events only, and
// still delivers exactly those after its position, in order, across the ring's wrap-around and evictions.
import t from 'tap'
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts'
import type { Address } from 'viem'
import type { Change } from '../../src/engine/types.ts'
import { signedIn, startHarness, type Harness } from '../fixtures/service.ts'
import { openRawStream, resumeStream } from './fixtures.ts'

const RETAINED = 2_000
const QUEUED_MAX = 300

let h: Harness
t.before(async () => {
  h = await startHarness({ stream: { retainedEventsMax: RETAINED, queuedEventsMax: QUEUED_MAX } })
})
t.teardown(() => h.stop())

/** An event of a job whose borrower and client are `borrower` and `client` (only what the hub routes by: not a whole job view). */
function jobChange(jobId: string, borrower: Address, client: Address): Change {
  return { kind: 'job', id: jobId, record: { value: 'funded', context: { jobId, borrower, client } }, final: false }
}

const stranger = (): Address => privateKeyToAccount(generatePrivateKey()).address

/** Publishes `count` events: every `every`-th names `wallet` (as borrower or client, in turn), the others strangers. */
function publishMixed(wallet: Address, count: number, every: number): number[] {
  const mine: number[] = []
  for (let i = 0; i < count; i++) {
    const own = i % every === 0
    const change = own ? (mine.length % 2 === 0 ? jobChange(`job_${i}`, wallet, stranger()) : jobChange(`job_${i}`, stranger(), wallet)) : jobChange(`job_${i}`, stranger(), stranger())
    h.app.stream.publish([change])
    if (own) mine.push(h.app.stream.walletSeqs(wallet).seq)
  }
  return mine
}

/** Resumes from `since` (resumeStream): the seqs it got, and its resync. */
async function resume(token: string, since: number, epoch: string, expected: number): Promise<{ seqs: number[]; resync: any }> {
  const { events: resumed, resync } = await resumeStream(h.url, token, since, epoch, expected)
  return { seqs: resumed.map((m) => m.seq), resync }
}

/** A fresh signed-in wallet, its token, and the epoch of a first connection (where its resumes start from). */
async function subscriber(): Promise<{ account: { address: Address }; token: string; epoch: string }> {
  const account = privateKeyToAccount(generatePrivateKey())
  const token = (await signedIn(h.url, account)).token as string
  const first = await openRawStream(h.url, token)
  const epoch = first.messages[0].epoch as string
  await first.close()
  return { account, token, epoch }
}

t.test('a resume reads only the wallet\'s own events and delivers exactly those after its position, in order', async (t) => {
  const { account, token, epoch } = await subscriber()
  const since = h.app.stream.walletSeqs(account.address).seq
  const mine = publishMixed(account.address, 1_500, 10)
  const before = h.app.stream.stats().resumeSeqsRead
  const { seqs, resync } = await resume(token, since, epoch, mine.length)
  t.equal(resync, undefined, 'no resync')
  t.same(seqs, mine, `exactly the wallet's ${mine.length} events, in order`)
  t.equal(h.app.stream.stats().resumeSeqsRead - before, mine.length, `the resume read ${mine.length} sequence numbers, not the ${1_500} events published`)
  const middle = mine[70] as number
  const rest = mine.filter((seq) => seq > middle)
  t.same((await resume(token, middle, epoch, rest.length)).seqs, rest, 'from a position in the middle: the rest')
})

t.test('after the ring wrapped around and dropped the oldest, a resume gets the wallet\'s retained events', async (t) => {
  const { account, token, epoch } = await subscriber()
  const mine = publishMixed(account.address, 3 * RETAINED, 25)
  const { oldestSeq } = h.app.stream.walletSeqs(account.address)
  const retained = mine.filter((seq) => seq >= oldestSeq)
  t.ok(retained.length < mine.length, 'some of the wallet\'s events left the ring')
  t.same((await resume(token, oldestSeq - 1, epoch, retained.length)).seqs, retained, 'the retained ones, in order')
  const older = await resume(token, oldestSeq - 2, epoch, 0)
  t.equal(older.resync?.reason, 'beyond_retention', 'a position before the retention is a resync')
})

t.test('a backlog beyond the per-connection queue is still a resync', async (t) => {
  const { account, token, epoch } = await subscriber()
  const since = h.app.stream.walletSeqs(account.address).seq
  publishMixed(account.address, QUEUED_MAX * 2, 1)
  const { seqs, resync } = await resume(token, since, epoch, 0)
  t.equal(resync?.reason, 'backlog_too_large')
  t.same(seqs, [], 'and no event before it')
})
