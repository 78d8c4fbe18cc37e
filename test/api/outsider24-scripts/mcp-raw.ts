// outsider24: one MCP tool's raw result (content and structuredContent). node --import tsx mcp-raw.ts <tool> '<json args>'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
const t = new StdioClientTransport({ command: 'npm', args: ['run', '--silent', 'mcp'], cwd: process.cwd(), env: { ...process.env, AGENT_CREDIT_URL: process.env.URL ?? 'http://127.0.0.1:8463' } as Record<string, string> })
const c = new Client({ name: 'o24', version: '1' })
await c.connect(t)
const r: any = await c.callTool({ name: process.argv[2]!, arguments: JSON.parse(process.argv[3] ?? '{}') })
console.log(JSON.stringify(r).slice(0, 1500))
const tool = (await c.listTools()).tools.find((x) => x.name === process.argv[2])
console.log('outputSchema', JSON.stringify(tool?.outputSchema)?.slice(0, 300))
await c.close()
