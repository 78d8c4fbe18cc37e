// outsider12: sign-ins counted per client address behind a trusted proxy (X-Forwarded-For). argv: url, then the
// X-Forwarded-For of each sign-in.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent } from '../fixtures/outsider12-agent.ts'
const [url, ...forwarded] = process.argv.slice(2)
for (const xff of forwarded) {
  const agent = new Agent(url!, privateKeyToAccount(generatePrivateKey()), xff === '-' ? {} : { 'x-forwarded-for': xff })
  const reply = await agent.signIn()
  console.log(`sign-in, X-Forwarded-For ${xff}: ${reply.status} ${reply.body.code ?? ''}`)
}
