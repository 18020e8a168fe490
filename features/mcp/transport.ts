// What /mcp refuses at the transport level, and in which words. One JSON-RPC message per POST:
// MCP 2025-06-18 removed JSON-RPC batching, and a batch would let one request make the server do
// (and send) the work of many, under one count of the budget (a 10 KB batch of resources/read
// made 27 MB of answer). The SDK's own HTTP refusals (406 for an Accept without both media types,
// 400 for a body that is not one JSON-RPC message or names an unsupported protocol version...)
// keep their JSON-RPC code, id and data, and get the API's Error fields like every error of /mcp.
import { AppError, type ErrorCode } from '../../plugins/errors/codes.js'
import { JSON_RPC, type JsonRpcId, JsonRpcRefusal } from '../../plugins/errors/jsonrpc.js'

const ONE_MESSAGE_HINT =
  'send one JSON-RPC 2.0 request or notification object per POST, e.g. {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'

/** A JSON-RPC batch (an array) is refused before the SDK sees it: 400, JSON-RPC -32600. */
export function refuseBatch(body: unknown): void {
  if (!Array.isArray(body)) return
  throw new JsonRpcRefusal(
    'invalid_request',
    `The request body is a JSON-RPC batch (${body.length} messages); this MCP endpoint takes one message per request.`,
    `${ONE_MESSAGE_HINT}: MCP removed batching in protocol version 2025-06-18`,
    { code: JSON_RPC.invalidRequest, id: null },
  )
}

interface SdkBody {
  id?: JsonRpcId
  error?: { code?: unknown; message?: unknown; data?: unknown }
}

/** What the caller can change, by the SDK's status and JSON-RPC code. */
function hintFor(status: number, rpcCode: number, said: string): string {
  if (status === 406) return 'send the header Accept: application/json, text/event-stream (MCP Streamable HTTP)'
  if (status === 405) return 'use POST'
  if (rpcCode === JSON_RPC.parseError || rpcCode === JSON_RPC.invalidRequest) return ONE_MESSAGE_HINT
  // MCP 2026-07-28's unsupported protocol version (-32022), header mismatch (-32020), missing capability (-32021).
  if (rpcCode === -32022 || /unsupported protocol version/i.test(said))
    return 'use a protocol version this server supports (listed in error.data.supported)'
  if (rpcCode === -32020) return 'make the Mcp-Method and Mcp-Name headers say what the body says'
  if (rpcCode === -32021) return 'declare the client capabilities listed in error.data.requiredCapabilities'
  return 'see the MCP specification of the Streamable HTTP transport (https://modelcontextprotocol.io/specification)'
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  403: 'insufficient_scope',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  500: 'internal_error',
}

/** Headers of the SDK's answer a client needs to act on it. */
const KEPT_HEADERS = ['allow', 'www-authenticate']

/**
 * The SDK's HTTP error answer (status 4xx/5xx, a JSON-RPC error body) as an Error of the API:
 * the status and the JSON-RPC code, id and data as the SDK gave them; our `code` and `hint`.
 */
export async function sdkRefusal(response: Response): Promise<AppError> {
  const body = ((await response.json().catch(() => ({}))) ?? {}) as SdkBody
  const rpcCode = typeof body.error?.code === 'number' ? body.error.code : JSON_RPC.serverError
  const id = typeof body.id === 'string' || typeof body.id === 'number' ? body.id : null
  const code = CODE_BY_STATUS[response.status] ?? (response.status >= 500 ? 'internal_error' : 'invalid_request')
  // The SDK's sentence, at most a line of it (it may quote a value of the request); a 500 shows none.
  const said = typeof body.error?.message === 'string' ? body.error.message.slice(0, 300) : ''
  const message = code === 'internal_error' || said === '' ? new AppError(code).message : said
  const headers: Record<string, string> = {}
  for (const name of KEPT_HEADERS) {
    const value = response.headers.get(name)
    if (value !== null) headers[name] = value
  }
  const hint = code === 'internal_error' ? undefined : hintFor(response.status, rpcCode, said)
  return new JsonRpcRefusal(
    code,
    message,
    hint,
    { code: rpcCode, id, ...(body.error?.data !== undefined && { data: body.error.data }) },
    headers,
  )
}
