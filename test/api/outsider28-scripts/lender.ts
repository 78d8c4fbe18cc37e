// outsider28's scripts: a lender as the documents set one up (sign in, register, fund the session wallet from the demo
// lender, send the setup approve) and wait until its wallet is seen able to lend.
import { privateKeyToAccount } from 'viem/accounts'
import { fresh, fund, keys, net, ok, send, signIn, until } from '../outsider24-scripts/doc.ts'

export async function lender(liquidity: bigint, funded: bigint, feeBps: number, bands: string[] = ['A', 'B', 'C']) {
  const account = await fresh(0n)
  const token = await signIn(account)
  const reg = await ok('POST', '/lenders/register', { availableLiquidityAtomic: String(liquidity), asset: 'USDC', networks: [net.slug], minFeeBps: feeBps, maxDurationSeconds: 2592000, acceptedRiskBands: bands }, token, 201)
  const session = privateKeyToAccount(reg.sessionKey.privateKey)
  await fund(session.address, funded, keys.lender)
  for (const tx of reg.setupTransactions) await send(session, tx)
  await until('lender in book', async () => BigInt((await ok('GET', `/lenders/${account.address}/wallet`)).activity.availableAtomic) > 0n)
  return { account, token, session }
}
