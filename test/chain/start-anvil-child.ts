// Helper process of devnet.test.ts: starts one anvil, prints its pid, then waits to be killed.
import { startAnvil } from '../../src/chain/anvil.ts'

const anvil = await startAnvil({ chainId: 31399 })
process.stdout.write(`anvil pid ${anvil.pid}\n`)
setInterval(() => {}, 60_000)
