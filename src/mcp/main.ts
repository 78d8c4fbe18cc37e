// `npm run mcp`: the MCP server on stdio. AGENT_CREDIT_URL names the service (default the README's), and
// AGENT_CREDIT_WALLET_KEY (hex private key) the wallet the borrower's and lender's tools act as, and
// AGENT_CREDIT_SESSION_KEY_DIR where register_lender keeps the session key (default ~/.agent-credit/session-keys),
// AGENT_CREDIT_RETRY_AFTER_MAX_SECONDS the longest Retry-After a tool call waits out before handing the wait to the
// model (default 10; 0: always the model).
// stdout is the protocol's channel: anything else goes to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createMcpServer, DEFAULT_SERVICE_URL } from './server.ts'

const walletKey = process.env['AGENT_CREDIT_WALLET_KEY']
if (walletKey !== undefined && walletKey !== '' && !/^0x[0-9a-fA-F]{64}$/.test(walletKey)) {
  process.stderr.write('AGENT_CREDIT_WALLET_KEY must be a 32-byte hex private key with 0x prefix\n')
  process.exit(2)
}
const retryAfterMax = process.env['AGENT_CREDIT_RETRY_AFTER_MAX_SECONDS']
if (retryAfterMax !== undefined && retryAfterMax !== '' && !/^\d{1,4}$/.test(retryAfterMax)) {
  process.stderr.write('AGENT_CREDIT_RETRY_AFTER_MAX_SECONDS must be a whole number of seconds (0 to 9999)\n')
  process.exit(2)
}
const server = createMcpServer({
  baseUrl: process.env['AGENT_CREDIT_URL'] || DEFAULT_SERVICE_URL,
  ...(walletKey ? { walletKey: walletKey as `0x${string}` } : {}),
  ...(retryAfterMax ? { retryAfterMaxSeconds: Number(retryAfterMax) } : {}),
  ...(process.env['AGENT_CREDIT_SESSION_KEY_DIR'] ? { sessionKeyDir: process.env['AGENT_CREDIT_SESSION_KEY_DIR'] } : {}),
})
await server.connect(new StdioServerTransport())
