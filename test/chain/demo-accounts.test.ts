// The devnet's demo accounts (src/chain/devnet.ts demoAccounts) are the standard derivation of anvil's development
// mnemonic, m/44'/60'/0'/0/<index of the role>: derived once per process with node:crypto's PBKDF2, they must be the
// accounts viem's own mnemonicToAccount gives (and anvil's well-known first account), and each call hands out its own
// objects.
import t from 'tap'
import { toHex } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { demoAccounts, demoRoles, devMnemonic } from '../../src/chain/devnet.ts'

t.test('every role is the account of its index under the development mnemonic', async (t) => {
  const accounts = demoAccounts()
  t.same(Object.keys(accounts), [...demoRoles])
  for (const [index, role] of demoRoles.entries()) {
    const reference = mnemonicToAccount(devMnemonic, { addressIndex: index })
    const key = reference.getHdKey().privateKey
    t.same(accounts[role], { role, address: reference.address, privateKey: key === null ? null : toHex(key) }, role)
  }
  t.equal(accounts.deployer.address, '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'anvil\'s first account deploys')
})

t.test('each call hands out objects of its own', async (t) => {
  const first = demoAccounts()
  first.lender.address = '0x0000000000000000000000000000000000000001'
  const second = demoAccounts()
  t.not(second.lender, first.lender)
  t.equal(second.lender.address, mnemonicToAccount(devMnemonic, { addressIndex: demoRoles.indexOf('lender') }).address, 'a change to one call\'s answer is not seen by the next')
})
