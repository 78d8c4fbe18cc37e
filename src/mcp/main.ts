// `npm run mcp`: the MCP server on stdio. AGENT_CREDIT_URL names the service (default the README's), and
// AGENT_CREDIT_WALLET_KEY (hex private key) the wallet the borrower's and lender's tools act as, and
// AGENT_CREDIT_SESSION_KEY_DIR where register_lender keeps the session key (default ~/.agent-credit/session-keys).
// stdout is the protocol's channel: anything else goes to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createMcpServer, DEFAULT_SERVICE_URL } from './server.ts'

const walletKey = process.env['AGENT_CREDIT_WALLET_KEY']
if (walletKey !== undefined && walletKey !== '' && !/^0x[0-9a-fA-F]{64}$/.test(walletKey)) {
  process.stderr.write('AGENT_CREDIT_WALLET_KEY must be a 32-byte hex private key with 0x prefix\n')
  process.exit(2)
}
const server = createMcpServer({
  baseUrl: process.env['AGENT_CREDIT_URL'] || DEFAULT_SERVICE_URL,
  ...(walletKey ? { walletKey: walletKey as `0x${string}` } : {}),
  ...(process.env['AGENT_CREDIT_SESSION_KEY_DIR'] ? { sessionKeyDir: process.env['AGENT_CREDIT_SESSION_KEY_DIR'] } : {}),
})
await server.connect(new StdioServerTransport())
