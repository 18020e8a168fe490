// The JSON-RPC 2.0 form of the errors of /mcp, sent beside the Error fields (`code`, `message`,
// `hint`) so that MCP clients read them too. Which JSON-RPC code a refusal is follows JSON-RPC 2.0
// §5.1: a body that could not be read as JSON is a parse error (-32700), JSON that is not one
// request object an invalid request (-32600), a failure of ours an internal error (-32603); the
// rest (credentials, origin, sizes, content types, budgets, storage) are the server's own errors,
// in the range JSON-RPC leaves to implementations (-32000; MCP 2026-07-28 keeps -32000 to -32019
// for them). No request id is known before the body is read, so those answers have `id: null`.
import { AppError, type ErrorCode, UnreadableBody } from './codes.js'

export const JSON_RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  serverError: -32000,
} as const

export type JsonRpcId = string | number | null

/** The JSON-RPC side of an error whose JSON-RPC form is known (e.g. the MCP SDK's own answer). */
export interface JsonRpcForm {
  code: number
  id: JsonRpcId
  data?: unknown
}

/** An Error of /mcp whose JSON-RPC form is given: the request's own id, a precise code, data. */
export class JsonRpcRefusal extends AppError {
  constructor(
    code: ErrorCode,
    message: string,
    hint: string | undefined,
    readonly rpc: JsonRpcForm,
    headers: Record<string, string> = {},
  ) {
    super(code, message, hint, headers)
    this.name = 'JsonRpcRefusal'
  }
}

/** JSON-RPC's view of an Error `code` (when nothing more precise is known). */
function codeOf(error: AppError): number {
  if (error instanceof UnreadableBody) return JSON_RPC.parseError
  const byCode: Partial<Record<ErrorCode, number>> = {
    invalid_request: JSON_RPC.invalidRequest,
    internal_error: JSON_RPC.internalError,
  }
  return byCode[error.code] ?? JSON_RPC.serverError
}

/** `jsonrpc`, `id` and `error` of an error response of /mcp; `error.message` is the Error's message. */
export function jsonRpcFields(error: AppError) {
  const form = error instanceof JsonRpcRefusal ? error.rpc : undefined
  return {
    jsonrpc: '2.0',
    id: form?.id ?? null,
    error: {
      code: form?.code ?? codeOf(error),
      message: error.message,
      ...(form?.data !== undefined && { data: form.data }),
    },
  }
}
