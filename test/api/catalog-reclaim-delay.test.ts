// The catalog publishes each network's credit contract's reclaimDelay() (outsider24: an agent could not know the latest
// dueAt a job may take, 422 job_reclaimable_before_due, without reading the chain).
import t from 'tap'
import { createPublicClient, http } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { networkChain } from '../../src/chain/clients.ts'
import { devnetReclaimDelaySeconds } from '../../src/chain/devnet.ts'
import { startHarness } from '../fixtures/service.ts'

const h = await startHarness()
t.teardown(() => h.stop())

t.test('networks[].reclaimDelaySeconds is the contract\'s reclaimDelay()', async (t) => {
  const catalog = (await fetch(`${h.url}/.well-known/service.json`).then((r) => r.json())) as { networks: { slug: string; reclaimDelaySeconds: number | null }[] }
  const net = catalog.networks.find((n) => n.slug === h.network.slug)
  const onChain = await createPublicClient({ chain: networkChain(h.network), transport: http(h.network.rpcUrl) }).readContract({ address: h.network.creditContract, abi: creditFacilityV2Abi, functionName: 'reclaimDelay' })
  t.equal(net?.reclaimDelaySeconds, Number(onChain))
  t.equal(net?.reclaimDelaySeconds, Number(devnetReclaimDelaySeconds), 'the devnet\'s')
  const llms = await fetch(`${h.url}/llms.txt`).then((r) => r.text())
  t.match(llms, /the catalog's networks\[\]\.reclaimDelaySeconds/)
})
