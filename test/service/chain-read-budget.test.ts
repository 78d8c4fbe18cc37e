// The chain read budget's rules, on a clock the test moves: one wallet takes at most its share of a network's burst,
// a wallet refused its share spends nothing of the network's budget, the budget is shared by all wallets, and each
// network has its own. And its setting.
import t from 'tap'
import { ConfigError, loadServiceConfig } from '../../src/app/config.ts'
import { ChainReadBudget, ChainReadsExhaustedError } from '../../src/service/chain-read-budget.ts'

const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as const

function refusal(take: () => void): ChainReadsExhaustedError | undefined {
  try {
    take()
    return undefined
  } catch (error) {
    if (error instanceof ChainReadsExhaustedError) return error
    throw error
  }
}

t.test('one wallet gets a quarter of the burst; refused, it spends nothing the others share', (t) => {
  let nowMs = 0
  const budget = new ChainReadBudget({ perSecond: 4, burst: 8 }, () => nowMs)
  t.equal(refusal(() => budget.take('a', wallet(1), undefined)), undefined)
  t.equal(refusal(() => budget.take('a', wallet(1), undefined)), undefined)
  for (let i = 0; i < 10; i++) {
    const refused = refusal(() => budget.take('a', wallet(1), undefined))
    t.match(refused, { network: 'a', walletShare: true, retryAfterSeconds: 1 }, 'past its share of 2')
  }
  // Six reads are left for the others: wallet 1's refusals took none of them.
  for (let n = 2; n <= 4; n++) {
    t.equal(refusal(() => budget.take('a', wallet(n), undefined)), undefined)
    t.equal(refusal(() => budget.take('a', wallet(n), undefined)), undefined)
  }
  t.match(refusal(() => budget.take('a', wallet(5), undefined)), { network: 'a', walletShare: false }, 'the network\'s burst is spent')
  t.equal(refusal(() => budget.take('b', wallet(5), undefined)), undefined, 'another network has its own budget')
  nowMs += 1000
  t.equal(refusal(() => budget.take('a', wallet(1), undefined)), undefined, 'a second later the wallet may read again')
  t.end()
})

t.test('a read of the wallet\'s own share only: refused past that share, never by a network the others spent', (t) => {
  const budget = new ChainReadBudget({ perSecond: 4, burst: 8 }, () => 0)
  for (let n = 2; n <= 5; n++) for (let i = 0; i < 2; i++) budget.take('a', wallet(n), undefined)
  t.match(refusal(() => budget.take('a', wallet(1), undefined)), { walletShare: false }, 'the others spent the network\'s burst')
  t.equal(refusal(() => budget.takeOwn('a', wallet(1))), undefined, 'its own share is whole: the network refused wallet 1\'s take above, which gave its share back')
  t.equal(refusal(() => budget.takeOwn('a', wallet(1))), undefined)
  t.match(refusal(() => budget.takeOwn('a', wallet(1))), { network: 'a', walletShare: true }, 'past its share')
  t.end()
})

t.test('unproven requests take one share of their own together, and never a wallet\'s', (t) => {
  const budget = new ChainReadBudget({ perSecond: 4, burst: 8 }, () => 0)
  t.equal(refusal(() => budget.takeUnproven('a', 'sign-in', undefined)), undefined)
  t.equal(refusal(() => budget.takeUnproven('a', 'sign-in', undefined)), undefined)
  t.match(refusal(() => budget.takeUnproven('a', 'sign-in', undefined)), { network: 'a', walletShare: true, message: /sign-ins whose wallet is checked on chain/ }, 'past the sign-ins\' share of 2')
  t.equal(refusal(() => budget.take('a', wallet(1), undefined)), undefined, 'every wallet\'s own share is whole')
  t.equal(refusal(() => budget.take('a', wallet(1), undefined)), undefined)
  t.equal(refusal(() => budget.takeUnproven('a', 'payment', undefined)), undefined, 'unproven payments have a share of their own')
  t.equal(refusal(() => budget.takeUnproven('b', 'sign-in', undefined)), undefined, 'another network\'s sign-ins have their own')
  t.end()
})

t.test('one client address takes at most a quarter of a network\'s budget, whatever wallets it names', (t) => {
  let nowMs = 0
  const budget = new ChainReadBudget({ perSecond: 4, burst: 8 }, () => nowMs)
  // Free wallets of one address: two reads in all (a quarter of 8), then refused as the address's.
  t.equal(refusal(() => budget.take('a', wallet(1), 'client-1')), undefined)
  t.equal(refusal(() => budget.take('a', wallet(2), 'client-1')), undefined)
  t.match(refusal(() => budget.take('a', wallet(3), 'client-1')), { network: 'a', walletShare: true, message: /this client address used its part/ })
  t.match(refusal(() => budget.takeUnproven('a', 'payment', 'client-1')), { walletShare: true, message: /this client address used its part/ }, 'unproven requests too')
  // Refused on its address's part, wallet 3 spent nothing of its own share, nor the unproven payments theirs.
  t.equal(refusal(() => budget.take('a', wallet(3), 'client-2')), undefined)
  t.equal(refusal(() => budget.take('a', wallet(3), 'client-2')), undefined, 'wallet 3\'s share is whole')
  t.equal(refusal(() => budget.takeUnproven('a', 'payment', 'client-3')), undefined)
  t.equal(refusal(() => budget.take('a', wallet(4), 'client-3')), undefined)
  t.equal(refusal(() => budget.take('b', wallet(1), 'client-1')), undefined, 'an address has a part of each network')
  t.equal(refusal(() => budget.take('a', wallet(5), 'client-4')), undefined, 'the others\' reads: the network\'s burst of 8 less 6')
  t.equal(refusal(() => budget.take('a', wallet(6), 'client-4')), undefined)
  // The network refuses: the address's part and the wallet's share are given back.
  t.match(refusal(() => budget.take('a', wallet(7), 'client-5')), { walletShare: false })
  t.match(refusal(() => budget.take('a', wallet(7), 'client-5')), { walletShare: false }, 'twice: without the refunds, a part and a share of 2 now empty')
  nowMs += 250 // one read a second comes back to the network (4 a second), none yet to an address's part (1 a second)
  t.equal(refusal(() => budget.take('a', wallet(7), 'client-5')), undefined, 'the refused take spent nothing of client 5\'s part or wallet 7\'s share')
  t.end()
})

t.test('a wallet is the same whatever the case of its address', (t) => {
  const budget = new ChainReadBudget({ perSecond: 1, burst: 4 }, () => 0)
  t.equal(refusal(() => budget.take('a', '0xABCDEF0000000000000000000000000000000001', undefined)), undefined)
  t.match(refusal(() => budget.take('a', '0xabcdef0000000000000000000000000000000001', undefined)), { walletShare: true })
  t.end()
})

t.test('the setting: 400 reads a second, burst 800, by default; CHAIN_READS_PER_SECOND and CHAIN_READS_BURST; 0 refused', (t) => {
  t.match(loadServiceConfig({}), { chainReadsPerSecond: 400, chainReadsBurst: 800 })
  t.match(loadServiceConfig({ CHAIN_READS_PER_SECOND: '20', CHAIN_READS_BURST: '40' }), { chainReadsPerSecond: 20, chainReadsBurst: 40 })
  t.throws(() => loadServiceConfig({ CHAIN_READS_PER_SECOND: '0' }), ConfigError, 'a budget of no reads would refuse every proof')
  t.end()
})
