// The MCP server of one request (the endpoint is stateless: one server per HTTP request, built
// from what was prepared once at start-up): the two app views as ui:// resources and the tools,
// bound to the request's caller, token or not; each tool call passes its own authorization.
import { RESOURCE_MIME_TYPE, registerAppResource, registerAppTool } from '@modelcontextprotocol/ext-apps/server'
import { type CallToolResult, McpServer, type StandardSchemaWithJSON } from '@modelcontextprotocol/server'
import { AppError, errorCodes } from '../errors/codes.js'
import type { JsonSchema } from '../spec/document.js'
import type { ValidateFunction } from '../validation/ajv.js'
import { validationError } from '../validation/messages.js'
import { admit, type ChallengeTarget, challengeResult, type SecurityScheme, type ToolPolicy } from './access.js'
import { type ListedTool, listToolsWithSecurity } from './listing.js'
import { type Caller, failure, ToolFailure, type ToolModule } from './tool.js'
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
async function refusal<D>(prepared: PreparedTool<D>, session: Session, target: ChallengeTarget): Promise<CallToolResult | undefined> {
  const { tool } = prepared
  const admission = admit(prepared.policy, session.caller)
  if (!admission.allowed) return challengeResult(tool.name, admission, target)
  if (!admission.anonymous) return undefined
  const wait = await session.spendAnonymous(tool.name)
  if (wait === 0) return undefined
  return failure(
    `Too many ${tool.name} calls without an access token from this address.`,
    `retry after ${wait} seconds, or connect with an access token`,
  )
}

/** A tool's outcome; a failure a caller can act on becomes a tool error, anything else a generic one. */
async function runTool<D>(parts: ServerParts<D>, prepared: PreparedTool<D>, args: unknown, session: Session): Promise<CallToolResult> {
  const refused = await refusal(prepared, session, parts.challenge)
  if (refused) return refused
  const { tool, validate } = prepared
  const given = tool.canonical ? tool.canonical(parts.deps, args ?? {}) : (args ?? {})
  if (!validate(given)) return refusedArguments(validate)
  try {
    return await tool.run(parts.deps, given, session.caller)
  } catch (err) {
    if (err instanceof ToolFailure) return failure(err.message, err.hint)
    if (err instanceof AppError && (err.statusCode < 500 || err.code === 'service_unavailable')) return failure(err.message, err.hint)
    parts.logFailure(tool.name, err as Error)
    return failure(errorCodes.internal_error.message)
  }
}

export function buildMcpServer<D>(parts: ServerParts<D>, session: Session): McpServer {
  const server = new McpServer(parts.serverInfo, { instructions: parts.instructions })
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
