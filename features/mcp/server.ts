// The MCP server of one request (the endpoint is stateless: one server per HTTP request, built
// from what was prepared once at start-up): the two app views as ui:// resources and the tools,
// bound to the request's caller, token or not; each tool call passes its own authorization.
import { RESOURCE_MIME_TYPE, registerAppResource, registerAppTool } from '@modelcontextprotocol/ext-apps/server'
import {
  type CallToolResult,
  type JSONRPCMessage,
  McpServer,
  type StandardSchemaWithJSON,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server'
import type { ValidateFunction } from '../../lib/ajv.js'
import { AppError, errorCodes } from '../../plugins/errors/codes.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import { isStorageUnavailable, storageUnavailable } from '../../plugins/store/unavailable.js'
import { validationError } from '../../plugins/validation/messages.js'
import { admit, type ChallengeTarget, challengeResult, type SecurityScheme, type ToolPolicy } from './access.js'
import { type ListedTool, listToolsWithSecurity } from './listing.js'
import { apiFailure, type Caller, failure, ToolFailure, type ToolModule } from './tool.js'
import { type View, viewMeta, viewUri } from './views.js'

export interface PreparedTool<D> {
  tool: ToolModule<D>
  inputSchema: JsonSchema
  validate: ValidateFunction
  policy: ToolPolicy
  securitySchemes: SecurityScheme[]
}

export interface ServerParts<D> {
  deps: D
  config: { publicHost: string; publicBaseUrl: string }
  tools: readonly PreparedTool<D>[]
  views: readonly View[]
  serverInfo: { name: string; version: string; title: string }
  instructions: string
  challenge: ChallengeTarget
  /** Where unexpected tool failures are logged (type, message and stack: never arguments). */
  logFailure: (tool: string, err: Error) => void
  /** Where storage being unreachable is logged, in one line as for HTTP (no stack, never arguments). */
  logUnavailable: (tool: string, err: Error) => void
  /** Accountability: every admitted call of a protected tool, by whom (client, staff member), never its arguments or answer. */
  logProtectedCall: (tool: string, caller: Caller) => void
}

/** Who calls over this request, and the anonymous budgets of their address. */
export interface Session {
  caller: Caller
  /** Seconds until an anonymous call of this tool is allowed again; 0: allowed (and counted). */
  spendAnonymous(tool: string): Promise<number>
}

/**
 * The tool's JSON Schema as the SDK takes it (Standard Schema with JSON). The SDK advertises it in
 * tools/list; the arguments are checked against it by the one Ajv in runTool, so that a refused
 * argument reads like a refused HTTP field ("Invalid email: … Hint: …"), not like an SDK message.
 */
function advertised(schema: JsonSchema): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'studio-api',
      validate: (value) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  }
}

/** The first violation of a tool's arguments as a tool error: `Invalid <argument>: <what>. Hint: <what to change>`. */
function refusedArguments(validate: ValidateFunction): CallToolResult {
  const e = validate.errors?.[0]
  const name =
    (e?.keyword === 'required' && String(e.params.missingProperty)) ||
    (e?.keyword === 'additionalProperties' && String(e.params.additionalProperty)) ||
    e?.instancePath.split('/')[1] ||
    'arguments'
  const err = validationError(validate.errors ?? [], 'arguments')
  return failure(`Invalid ${name}: ${err.message}`, err.hint)
}

/** Authorization first (the challenge, or the anonymous budget), then the arguments; undefined: go ahead. */
async function refusal<D>(
  prepared: PreparedTool<D>,
  session: Session,
  target: ChallengeTarget,
  logCall?: ServerParts<D>['logProtectedCall'],
): Promise<CallToolResult | undefined> {
  const { tool } = prepared
  const admission = admit(prepared.policy, session.caller)
  if (!admission.allowed) return challengeResult(tool.name, admission, target)
  if (!admission.anonymous) {
    if (prepared.policy.scope !== undefined) logCall?.(tool.name, session.caller)
    return undefined
  }
  const wait = await session.spendAnonymous(tool.name)
  if (wait === 0) return undefined
  return apiFailure(
    new AppError(
      'rate_limited',
      `Too many ${tool.name} calls without an access token from this address.`,
      `retry after ${wait} seconds, or connect with an access token`,
    ),
  )
}

/** A tool's outcome; a failure a caller can act on becomes a tool error, anything else a generic one. */
async function runTool<D>(parts: ServerParts<D>, prepared: PreparedTool<D>, args: unknown, session: Session): Promise<CallToolResult> {
  const refused = await refusal(prepared, session, parts.challenge, parts.logProtectedCall)
  if (refused) return refused
  const { tool, validate } = prepared
  const given = tool.canonical ? tool.canonical(parts.deps, args ?? {}) : (args ?? {})
  if (!validate(given)) return refusedArguments(validate)
  try {
    return await tool.run(parts.deps, given, session.caller)
  } catch (err) {
    if (err instanceof ToolFailure) return failure(err.message, err.hint)
    if (err instanceof AppError && (err.statusCode < 500 || err.code === 'service_unavailable')) return apiFailure(err)
    // Storage unreachable (PostgreSQL down, the database file lost): what HTTP answers 503, a
    // tool error to retry, logged in one line (the store says once what happened, as for HTTP).
    if (isStorageUnavailable(err)) {
      parts.logUnavailable(tool.name, err as Error)
      return apiFailure(storageUnavailable())
    }
    parts.logFailure(tool.name, err as Error)
    return failure(errorCodes.internal_error.message)
  }
}

/** JSON-RPC's resource-not-found code of MCP 2025-06-18 and 2025-11-25 (2026-07-28: -32602). */
const RESOURCE_NOT_FOUND_2025 = -32002

/** The SDK's resources/read miss: -32602 whose data is exactly `{uri}` (its ResourceNotFoundError). */
function isResourceNotFound(message: JSONRPCMessage): boolean {
  if (!('error' in message) || message.error.code !== -32602) return false
  const data = message.error.data as Record<string, unknown> | undefined
  return typeof data?.uri === 'string' && Object.keys(data).length === 1
}

/**
 * A resources/read of an unknown URI is -32602 with `data: {uri}` in MCP 2026-07-28 (SEP-2164),
 * which the SDK answers on every revision; the 2025 revisions it also serves say -32002 ("Resource
 * not found", resources § Error Handling). A 2025-era exchange gets its revision's code.
 */
function resourceNotFoundAs2025(server: McpServer): void {
  const connect = server.connect.bind(server)
  server.connect = async (transport) => {
    const send = transport.send.bind(transport)
    transport.send = (message, options) =>
      send(
        isResourceNotFound(message) && 'error' in message
          ? { ...message, error: { ...message.error, code: RESOURCE_NOT_FOUND_2025 } }
          : message,
        options,
      )
    return connect(transport)
  }
}

/**
 * The revisions served: the SDK's from 2025-06-18 on (the 2026-07-28 era is added by the SDK).
 * 2025-03-26 let a client send JSON-RPC batches, which /mcp refuses (transport.ts), and the older
 * ones spoke HTTP through the HTTP+SSE transport, not Streamable HTTP; a client asking for one of
 * them is offered the latest 2025 revision instead.
 */
export const PROTOCOL_VERSIONS = SUPPORTED_PROTOCOL_VERSIONS.filter((version) => version >= '2025-06-18')

/** The protocol era of the exchange, as the SDK's handler classified it. */
export type Era = 'legacy' | 'modern'

export function buildMcpServer<D>(parts: ServerParts<D>, session: Session, era: Era): McpServer {
  // Stateless, without a GET stream, and tools and views fixed at start-up: no list ever changes,
  // and no notification could reach a client if one did. The SDK would advertise listChanged: true.
  const server = new McpServer(parts.serverInfo, {
    instructions: parts.instructions,
    supportedProtocolVersions: PROTOCOL_VERSIONS,
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
  })
  if (era === 'legacy') resourceNotFoundAs2025(server)
  const ui = viewMeta(parts.config)

  for (const view of parts.views) {
    registerAppResource(
      server,
      view.title,
      view.uri,
      { description: view.description, mimeType: RESOURCE_MIME_TYPE, _meta: { ui } },
      async () => ({
        contents: [{ uri: view.uri, mimeType: RESOURCE_MIME_TYPE, text: view.html, _meta: { ui } }],
      }),
    )
  }

  const listed: ListedTool[] = []
  for (const prepared of parts.tools) {
    const { tool, inputSchema, securitySchemes } = prepared
    const config = {
      title: tool.title,
      description: tool.description,
      inputSchema: advertised(inputSchema),
      annotations: tool.annotations,
    }
    const callback = async (args: unknown) => runTool(parts, prepared, args, session)
    const uiMeta = tool.ui && {
      ui: {
        ...(tool.ui.view !== undefined && { resourceUri: viewUri(parts.config, tool.ui.view) }),
        ...(tool.ui.visibility !== undefined && { visibility: tool.ui.visibility }),
      },
    }
    // securitySchemes in _meta too: the mirror for hosts that read only _meta (listing.ts).
    const _meta = { ...uiMeta, securitySchemes }
    const registered = tool.ui
      ? registerAppTool(server, tool.name, { ...config, _meta: _meta as typeof _meta & { ui: object } }, callback)
      : server.registerTool(tool.name, { ...config, _meta }, callback)
    listed.push({ name: tool.name, registered, inputSchema, securitySchemes })
  }
  listToolsWithSecurity(server, listed)
  return server
}
