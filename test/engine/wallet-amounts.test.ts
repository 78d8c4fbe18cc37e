// What a lender's session wallets have promised to live leases, per lender, network and asset (state.ts
// WalletAmounts): nested maps so matching builds no key per lender it scans (issue 11). Each wallet is its own sum;
// a wallet back at 0 leaves (the invariants compare the wallets there are with the live leases).
import t from 'tap'
import { walletKey } from '../../src/engine/keys.ts'
import { WalletAmounts } from '../../src/engine/state.ts'

t.test('amounts add up per wallet, read 0 when absent, and leave at 0 with their empty maps', async (t) => {
  const amounts = new WalletAmounts()
  t.equal(amounts.get('0xa', 'net-1', 'USDC'), 0n)
  amounts.add('0xa', 'net-1', 'USDC', 100n)
  amounts.add('0xa', 'net-1', 'USDC', 50n)
  amounts.add('0xa', 'net-2', 'USDC', 7n)
  amounts.add('0xa', 'net-1', 'EURC', 3n)
  amounts.add('0xb', 'net-1', 'USDC', 9n)
  t.equal(amounts.get('0xa', 'net-1', 'USDC'), 150n)
  t.equal(amounts.get('0xa', 'net-2', 'USDC'), 7n)
  t.equal(amounts.get('0xa', 'net-1', 'EURC'), 3n)
  t.equal(amounts.get('0xb', 'net-1', 'USDC'), 9n)
  t.equal(amounts.get('0xb', 'net-2', 'USDC'), 0n)
  t.same([...amounts.byWalletKey()], [
    [walletKey('0xa', 'net-1', 'USDC'), 150n], [walletKey('0xa', 'net-1', 'EURC'), 3n], [walletKey('0xa', 'net-2', 'USDC'), 7n],
    [walletKey('0xb', 'net-1', 'USDC'), 9n],
  ])
  amounts.add('0xa', 'net-1', 'USDC', -150n)
  amounts.add('0xa', 'net-2', 'USDC', -7n)
  amounts.add('0xb', 'net-1', 'USDC', -9n)
  t.equal(amounts.get('0xa', 'net-1', 'USDC'), 0n)
  t.same([...amounts.byWalletKey()], [[walletKey('0xa', 'net-1', 'EURC'), 3n]], 'only the wallet still promised is left')
  amounts.add('0xa', 'net-1', 'EURC', -3n)
  t.equal(amounts.byWalletKey().size, 0)
  t.same(amounts, new WalletAmounts(), 'no empty map is kept')
})
