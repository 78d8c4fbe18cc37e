// outsider12: forged resume cursors on the event stream (/events?since=&epoch=) from a fresh wallet.
import WebSocket from 'ws'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Agent } from '../fixtures/outsider12-agent.ts'
const url = process.argv[2] ?? 'http://127.0.0.1:18412'
const agent = new Agent(url, privateKeyToAccount(generatePrivateKey()))
await agent.signIn()
const hello = await new Promise<any>((resolve) => { const ws = new WebSocket(`${url.replace('http', 'ws')}/events`, { headers: { authorization: `Bearer ${agent.token}` } }); ws.on('message', (d) => { ws.close(); resolve(JSON.parse(String(d))) }) })
const tries = ['', '?since=0', '?since=-1', '?since=999999999999&epoch=x', '?since=1e400&epoch=1', '?since=abc', '?since=1&since=2', '?since=9007199254740993&epoch=0', `?since=${hello.seq + 1000}&epoch=${hello.epoch}`, `?since=${hello.seq}&epoch=${hello.epoch}`, `?since=5&epoch=${hello.epoch}`, `?since=99999999999&epoch=${hello.epoch}`]
for (const q of tries) {
  const result = await new Promise<string>((resolve) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/events${q}`, { headers: { authorization: `Bearer ${agent.token}` } })
    const timer = setTimeout(() => { ws.terminate(); resolve('no message in 3 s') }, 3000)
    ws.on('message', (data) => { clearTimeout(timer); ws.close(); resolve(`message ${String(data).slice(0, 400)}`) })
    ws.on('unexpected-response', (_req, res) => { clearTimeout(timer); let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(`HTTP ${res.statusCode} ${b.slice(0, 160)}`)) })
    ws.on('error', (e) => { clearTimeout(timer); resolve(`error ${e.message}`) })
    ws.on('close', (code, reason) => { clearTimeout(timer); resolve(`closed ${code} ${reason}`) })
  })
  console.log(`${q.slice(0, 50) || '(none)'} -> ${result}`)
}
