// outsider12: the paid /credit-score as a stranger sees it. The payer's EIP-3009 authorization (in PAYMENT-SIGNATURE)
// pays the score's payee whoever submits it; a stranger who sees it (the facilitator's pending settlement in a public
// mempool) submits it first. Does the payer get its score, or pay for nothing? Here the front-run is simulated: the
// stranger submits the authorization on chain just before the request that carries it reaches the service.
import { generateKeyPair, exportJWK } from 'jose'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { createPublicClient, createWalletClient, http, parseAbi, defineChain, type Hex } from 'viem'
import { devnetOf, type Json } from '../fixtures/outsider12-agent.ts'

const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const { catalog, key } = await devnetOf(url)
const netB = (catalog['networks'] as Json[]).find((n) => n['slug'] === 'devnet-b')!
const chain = defineChain({ id: netB['chainId'], name: 'devnet-b', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [netB['rpcUrl']] } } })
const token = netB['assets'][0]['address'] as `0x${string}`
const payer = key('borrower')
const stranger = key('deployer') // any account with gas
const abi = parseAbi(['function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)', 'function balanceOf(address) view returns (uint256)'])
const pub = createPublicClient({ chain, transport: http(netB['rpcUrl']) })
const before = await pub.readContract({ address: token, abi, functionName: 'balanceOf', args: [payer.address] })

let frontRun = process.argv[3] !== 'honest'
const intercepting: typeof fetch = async (input, init) => {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined))
  const signatureHeader = headers.get('payment-signature')
  if (signatureHeader && frontRun) {
    frontRun = false
    const payload = JSON.parse(Buffer.from(signatureHeader, 'base64').toString('utf8')) as Json
    const { authorization, signature } = payload['payload'] as { authorization: Json; signature: Hex }
    const wallet = createWalletClient({ account: stranger, chain, transport: http(netB['rpcUrl']) })
    const hash = await wallet.writeContract({ address: token, abi, functionName: 'transferWithAuthorization', args: [authorization['from'], authorization['to'], BigInt(authorization['value']), BigInt(authorization['validAfter']), BigInt(authorization['validBefore']), authorization['nonce'], signature] })
    const receipt = await pub.waitForTransactionReceipt({ hash })
    console.log('the stranger submitted the payer\'s authorization first:', receipt.status)
  }
  return fetch(input, init)
}
const client = new x402Client().register(`eip155:${netB['chainId']}`, new ExactEvmScheme(payer)).setSpendControls({ allowedAssets: [{ network: `eip155:${netB['chainId']}`, asset: token, maxAmountPerPayment: '10000' }] })
const { publicKey } = await generateKeyPair('ECDH-ES', { crv: 'P-256' })
const res = await wrapFetchWithPayment(intercepting, client)(`${url}/credit-score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject: process.argv[4] ?? payer.address, publicKey: await exportJWK(publicKey) }) })
const text = await res.text()
const after = await pub.readContract({ address: token, abi, functionName: 'balanceOf', args: [payer.address] })
console.log('answer', res.status, text.slice(0, 300))
console.log('the payer paid', (before - after).toString(), 'atomic USDC')
