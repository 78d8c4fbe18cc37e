// bench/fixtures/agents.ts untilMinedInNonceOrder: a transaction anvil stranded in its pool's queue (its nonce is the
// sender's on-chain nonce, yet it waits there for a predecessor's marker) is sent again and mined, and the one after it.
// fundLenders waits on it before the approvals: CI once saw 6 of 20 mints never mined, the wallets approved and empty.
import t from 'tap'
import { createTestClient, encodeFunctionData, http, type Hex, type PublicClient } from 'viem'
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { untilMinedInNonceOrder } from '../../bench/fixtures/agents.ts'
import { testStablecoinAbi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { setupDevnet, USDC } from '../chain/fixtures/devnet.ts'

t.test('mints stranded in anvil’s queue at the on-chain nonce are sent again and mined', async (t) => {
  const f = await setupDevnet(t)
  const { network } = f
  const publicClient = f.clients.publicClient as unknown as PublicClient
  const test = createTestClient({ chain: networkChain(network), transport: http(network.rpcUrl), mode: 'anvil' })
  const deployer = privateKeyToAccount(f.accounts.deployer.privateKey)
  const holders = [privateKeyToAddress(generatePrivateKey()), privateKeyToAddress(generatePrivateKey())]
  const skipped = await publicClient.getTransactionCount({ address: deployer.address, blockTag: 'pending' })
  const firstNonce = skipped + 1
  const raw: Hex[] = []
  for (const [i, holder] of holders.entries()) {
    raw.push(
      await deployer.signTransaction({
        chainId: network.chainId, type: 'eip1559', nonce: firstNonce + i, gas: 120_000n, maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n,
        to: f.token, data: encodeFunctionData({ abi: testStablecoinAbi, functionName: 'mint', args: [holder, 5n * USDC] }),
      }),
    )
  }
  // The end state of anvil's race, made in order: both wait behind nonce `skipped`, which then becomes the chain's
  // past with no transaction of theirs (anvil_setNonce), as when their predecessor was mined between their nonce
  // check and their entry into the pool.
  const hashes: Hex[] = []
  for (const tx of raw) hashes.push(await publicClient.sendRawTransaction({ serializedTransaction: tx }))
  await test.setNonce({ address: deployer.address, nonce: firstNonce })
  await test.mine({ blocks: 1 })
  t.equal(await publicClient.getTransactionCount({ address: deployer.address, blockTag: 'latest' }), firstNonce, 'a block later, neither is mined')
  const { queued } = await test.getTxpoolContent()
  t.equal(Object.values(queued).flatMap((byNonce) => Object.values(byNonce)).filter((tx) => hashes.includes(tx.hash)).length, 2, 'both wait in the queue')

  const { resent } = await untilMinedInNonceOrder(publicClient, test, deployer.address, firstNonce, raw, hashes, Date.now() + 60_000)
  t.ok(resent >= 1, 'the stranded one was sent again')
  t.same(await Promise.all(holders.map((holder) => f.balance(holder))), [5n * USDC, 5n * USDC], 'both mints are mined')
})
