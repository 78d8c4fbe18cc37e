// outsider24: lists the MCP server's tools (name, description's first line, input schema's required fields).
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
const t = new StdioClientTransport({ command: 'npm', args: ['run', '--silent', 'mcp'], cwd: process.cwd(), env: { ...process.env, AGENT_CREDIT_URL: process.env.URL ?? 'http://127.0.0.1:8463', AGENT_CREDIT_WALLET_KEY: '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6' } as Record<string, string> })
const c = new Client({ name: 'o24', version: '1' })
await c.connect(t)
for (const tool of (await c.listTools()).tools) console.log(tool.name, '|', (tool.description ?? '').slice(0, 160).replace(/\n/g, ' '), '| required', JSON.stringify((tool.inputSchema as any).required), Object.keys((tool.inputSchema as any).properties ?? {}).join(','))
await c.close()
