// outsider13: free signed-in wallets of one client address emptied a network's chain read budget with transaction
// proofs (test/api/outsider13-scripts/free-proofs-flood.ts on branch outsider13). A sign-in is free (600 an hour per
// client address) and each wallet took its quarter of the budget with random funding hashes (one receipt read each,
// 422 proof_not_found): four wallets of one address held it empty, and an agent's job registration on that network was
// 503 chain_reads_exhausted for as long as they went on. Now each read also takes from its client address's part (a
// quarter of the network's, src/service/chain-read-budget.ts): the address is refused past it, and an agent at another
// address has its proof read. The addresses are x-forwarded-for's (the test's connection a trusted proxy). Fails on
// 36aa11c (the agent's registration is 503).
import t from 'tap'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../src/chain/config.ts'
import { signedIn, startHarness } from '../fixtures/service.ts'
import { postFrom, randomHash } from './fixtures/api.ts'

// The smallest rate, so that nothing comes back while the test runs: a burst of 8, a wallet's share and an address's part 2.
const BURST = 8
const h = await startHarness({ config: { chainReadsPerSecond: 1, chainReadsBurst: BURST, trustedProxies: ['127.0.0.1'] } })
t.teardown(() => h.stop())
const networkB = h.devnet.networks.find((n) => n.x402SelfFacilitate) as NetworkConfig

const job = (agent: string) => ({
  jobId: `job_o13_${randomHash().slice(2, 14)}`, network: networkB.slug, asset: 'USDC', agent, receivableAtomic: '1000000',
  dueAt: new Date(Date.now() + 86400_000).toISOString(), fundingTxHash: randomHash(),
})


t.test('free signed-in wallets of one address take at most its part of the network\'s chain read budget', async (t) => {
  const wallets = await Promise.all(Array.from({ length: 5 }, () => signedIn(h.url, privateKeyToAccount(generatePrivateKey()))))
  const replies = await Promise.all(wallets.flatMap((w) => [0, 1].map(() => postFrom(w, '198.51.100.1', '/credit/jobs', job(w.address!)))))
  t.comment(`strangers' proofs: ${JSON.stringify(replies.map((r) => `${r.status} ${r.body['code'] ?? ''}`))}`)
  t.equal(replies.filter((r) => r.body['code'] === 'proof_not_found').length, BURST / 4, 'the address\'s part (a quarter of the burst) is read')
  t.equal(replies.filter((r) => r.status === 503 && r.body['code'] === 'chain_reads_exhausted').length, replies.length - BURST / 4, 'and no more')
  const honest = await signedIn(h.url, privateKeyToAccount(h.devnet.accounts.borrower.privateKey))
  const reply = await postFrom(honest, '198.51.100.2', '/credit/jobs', job(honest.address!))
  t.comment(`honest: ${reply.status} ${JSON.stringify(reply.body).slice(0, 400)}`)
  t.equal(reply.body['code'], 'proof_not_found', 'an agent\'s proof at another address is read (its random hash is not on chain), whatever free wallets of one address did')
})
