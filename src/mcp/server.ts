// The MCP server (stdio): the API as tools for LLM agents. Each call goes through the typed SDK, so sign-in, renewal,
// idempotency keys and safe retries are the SDK's; a refusal comes back as a tool error carrying the stable code, and
// the wait the service asked for when the SDK stopped waiting (its retryAfterSeconds). An action (a POST) sends the
// `idempotencyKey` it was given, or one it makes, and names it in its answer, error or not, so a model that did not see
// an outcome retries with it and acts once.
import { randomUUID } from 'node:crypto'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { AgentCredit, CreditApiError, OfferNotMatchedError } from '../client/sdk.ts'
import { KEY_PATTERN } from '../api/idempotency.ts'
import { MCP_TOOLS, type McpTool } from './tools.ts'
import { DEFAULT_SESSION_KEY_DIR, SessionKeyStore } from './session-keys.ts'

export const DEFAULT_SERVICE_URL = 'http://127.0.0.1:8402'

export interface McpServerOptions {
  baseUrl: string
  /** The wallet the actions sign in with; without it only the read tools are offered. */
  walletKey?: `0x${string}`
  /** Where register_lender writes the session key (default DEFAULT_SESSION_KEY_DIR). */
  sessionKeyDir?: string
  /**
   * The longest Retry-After a tool call waits out itself (the SDK's retryAfterMaxSeconds, default 10 s); a longer
   * wait is handed to the model in the tool error. 0 hands every wait to the model.
   */
  retryAfterMaxSeconds?: number
}

/** A tool's argument refused before anything is sent: a tool error with this code and the message as its detail. */
export class ToolArgumentError extends Error {
  override readonly name = 'ToolArgumentError'
  readonly code: string
  constructor(code: string, detail: string) {
    super(detail)
    this.code = code
  }
}

/**
 * A failed call as a tool error: the service's problem+json, so the agent can branch on its code and read which field
 * was wrong, as text and as structuredContent.error. A 429 or 503 with Retry-After changed nothing: the wait goes in
 * both (retryAfterSeconds), with a sentence saying to call the tool again with the same arguments after it.
 */
export function toolError(toolName: string, error: unknown, idempotencyKey?: string): CallToolResult {
  const failure = {
    ...(error instanceof CreditApiError
      ? { status: error.status, code: error.code, ...error.problem, ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }) }
      : error instanceof ToolArgumentError
        ? { code: error.code, detail: error.message }
        : { code: 'mcp_call_failed', detail: String(error) }),
    // request_and_match: the approved offer stands; match_offer matches it, a new request would make a second one.
    ...(error instanceof OfferNotMatchedError ? { offerId: error.offerId, note: `The approved offer ${error.offerId} stands: call match_offer with it, not request_credit again.` } : {}),
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  }
  const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(failure, null, 2) }]
  const sameArguments = idempotencyKey === undefined ? 'the same arguments' : `the same arguments and idempotencyKey ${idempotencyKey}`
  if ('retryAfterSeconds' in failure) {
    content.push({ type: 'text', text: `Nothing was changed or recorded. Wait ${failure.retryAfterSeconds} s, then call ${toolName} again with ${sameArguments}.` })
  }
  return { isError: true, content, structuredContent: { error: failure } }
}

export function createMcpServer(options: McpServerOptions): Server {
  // Reads never sign in, so without a wallet key a throwaway account stands in and is never used to sign.
  const account = privateKeyToAccount(options.walletKey ?? generatePrivateKey())
  const sdk = new AgentCredit({ baseUrl: options.baseUrl, account, ...(options.retryAfterMaxSeconds === undefined ? {} : { retryAfterMaxSeconds: options.retryAfterMaxSeconds }) })
  const sessionKeys = new SessionKeyStore(options.sessionKeyDir ?? DEFAULT_SESSION_KEY_DIR)
  const tools = MCP_TOOLS.filter((tool) => options.walletKey !== undefined || !tool.needsWallet)
  const server = new Server({ name: 'agent-credit', version: '0.1.0' }, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as { type: 'object' } })),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = tools.find((candidate) => candidate.name === request.params.name)
    if (tool === undefined) {
      const why = MCP_TOOLS.some((candidate) => candidate.name === request.params.name) ? 'needs a wallet key (AGENT_CREDIT_WALLET_KEY)' : 'is not a tool of this server'
      return { isError: true, content: [{ type: 'text', text: `${request.params.name} ${why}` }] }
    }
    const { idempotencyKey: given, ...args } = request.params.arguments ?? {}
    if (!tool.keyed) return answer(tool, sdk, request.params.arguments ?? {}, sessionKeys)
    if (given !== undefined && (typeof given !== 'string' || !KEY_PATTERN.test(given))) {
      return toolError(tool.name, new ToolArgumentError('invalid_idempotency_key', 'idempotencyKey must be 1 to 255 visible ASCII characters; nothing was sent'))
    }
    const idempotencyKey = given ?? randomUUID()
    return answer(tool, sdk.withIdempotencyKey(idempotencyKey), args, sessionKeys, idempotencyKey)
  })
  return server
}

/** One tool call: its result as text and structuredContent, or the tool error; an action's answer names its key. */
async function answer(tool: McpTool, sdk: AgentCredit, args: Record<string, unknown>, sessionKeys: SessionKeyStore, idempotencyKey?: string): Promise<CallToolResult> {
  try {
    const result = await tool.run(sdk, args, sessionKeys)
    const content: CallToolResult['content'] = [{ type: 'text', text: JSON.stringify(result, null, 2) }]
    if (idempotencyKey === undefined) return { content, structuredContent: { result } }
    content.push({ type: 'text', text: `idempotencyKey: ${idempotencyKey} (pass it again to retry this very call without acting twice)` })
    return { content, structuredContent: { result, idempotencyKey } }
  } catch (error) {
    return toolError(tool.name, error, idempotencyKey)
  }
}
