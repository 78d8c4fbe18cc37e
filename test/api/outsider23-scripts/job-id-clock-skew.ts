// outsider23: a job id belongs to its earliest funding on any network (src/service/borrowers.ts refuseLaterFunding,
// outsider8's finding), and "earliest" compared the two chains' block timestamps. Chains' clocks are not one clock:
// a network whose block timestamps run behind another's (block times of seconds, a sequencer's timestamps that may lag,
// a testnet's clock) let a squatter fund the id there LATER in real time and still be "earlier". Here devnet-a's
// chain runs 10 minutes ahead of devnet-b's (anvil's time moved, as tests do). The victim's client funds a job on
// devnet-a for its borrower, who registers it a little later (the client hands it the id: llms.txt's flow); meanwhile
// a stranger who read the id from the mined fundJob funds the same id on devnet-b, 1 atomic unit, naming itself the
// borrower, and registers it first. It used to get 201, and the real job's registration 409, its borrower no credit on
// it and the client's escrow waiting out reclaimDelay (10 days on the devnet). Cost to the squatter: the gas of an
// approve and a fundJob, and 1 atomic unit, on the lagging network.
// Now the fundings are ordered on the service's clock through each chain's latest block (src/service/funding-order.ts),
// and fundings closer than that estimate's uncertainty are ordered by their timestamps as before. This script
// measures the window left: for each delay (seconds) between the real funding's receipt and the squatter's fundJob,
// a fresh id, the squat registered first, then the real job. Exits 1 if a squat funded at the last delay (8 s by
// default; the devnet's uncertainty is 4 s and the reads' span) still takes the id.
// node --import tsx test/api/outsider23-scripts/job-id-clock-skew.ts [delay seconds ...]
import type { NetworkConfig } from '../../../src/chain/config.ts'
import { startHarness } from '../../fixtures/service.ts'
import { moveClockAhead, squatAfter } from '../fixtures/job-id-squat.ts'

const delays = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [0, 1, 2, 3, 4, 5, 6, 8]
const h = await startHarness()
let squatWinsPastWindow = false
try {
  const a = h.network
  const b = h.devnet.networks[1] as NetworkConfig
  await moveClockAhead(a, 600)
  for (const delay of delays) {
    const { squatReply: squat, realReply: real, story } = await squatAfter(h, a, b, delay * 1000)
    console.log(`squat ${delay} s after the real funding's receipt (${story}): squat ${squat.status} ${squat.body.code ?? squat.body.state}, real ${real.status} ${real.body.code ?? real.body.state}`)
    if (delay === delays[delays.length - 1]) squatWinsPastWindow = squat.status === 201 || real.status !== 201
  }
} finally {
  await h.stop()
}
console.log(squatWinsPastWindow ? 'a squat funded past the window on the lagging chain owns the id' : 'past the window, the earliest funding in real time owns the id')
process.exit(squatWinsPastWindow ? 1 : 0)
