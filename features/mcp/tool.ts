// What an MCP tool is, for the MCP plugin: a module the app hands in (handlers/tools/), with its
// arguments' JSON Schema (derived from the spec), who may call it, the view it renders in and a
// run function over the dependencies the app gives it. Tools return text for hosts without UI
// and structured content for views.
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/server'
import type { AppError } from '../../plugins/errors/codes.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import { visible } from './untrusted.js'

/** The caller of a tool: the verified client of the bearer token, or an anonymous caller. */
export interface Caller {
  /** The client of the token; null when no token was sent. */
  clientId: string | null
  /** The staff member of a person's token (features/staff); absent for a machine's token or none. */
  person?: string
  /** The scopes the token grants (none when anonymous). */
  scopes: ReadonlySet<string>
  /**
   * Whose idempotency keys these are, as for HTTP: `client:<id>`, or `addr:<address>` when
   * anonymous (the address as budgets count it: IPv6 as its /64).
   */
  owner: string
}

/** The MCP app views (ui:// resources) a tool can render in. */
export type ViewName = 'playbook' | 'pricing-estimator'

/** A rate-limit budget by name (RATE_LIMITS overrides it by that name). */
export interface NamedBudget {
  name: string
  max: number
  window: string
}

export interface ToolModule<D> {
  name: string
  title: string
  description: string
  /**
   * The arguments' JSON Schema, a flat object schema that refuses unknown arguments; built once
   * at start-up from the spec and the data. Arguments are validated against it before `run`.
   */
  inputSchema(deps: D): JsonSchema
  /**
   * The arguments as the schema expects them, made before validation (e.g. names people type made
   * canonical: "mid century" → "Mid-Century Modern"). Must not modify its input.
   */
  canonical?(deps: D, args: unknown): unknown
  annotations: ToolAnnotations
  /**
   * The OAuth scope a token must grant to call this tool. Without one the tool is public: no
   * token needed (a token that is sent is still verified).
   */
  scope?: string
  /**
   * With a scope: callers without a token may call the tool too while `allowed` says so (an
   * operator switch), each address within `budget`. A token that is sent must still grant the scope.
   */
  anonymous?: { allowed(deps: D): boolean; budget: NamedBudget }
  /** MCP Apps metadata: the view the result renders in, and who may call the tool. */
  ui?: { view?: ViewName; visibility?: ('model' | 'app')[] }
  // biome-ignore lint/suspicious/noExplicitAny: arguments are validated against inputSchema before run
  run(deps: D, args: any, caller: Caller): Promise<CallToolResult>
}

/** A refusal a caller can act on: becomes a tool error whose text is the message and the hint. */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message)
    this.name = 'ToolFailure'
  }
}

/** A result with text for hosts without UI and structured content for views. */
export function success(text: string, structuredContent: object): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structuredContent as Record<string, unknown> }
}

/**
 * A tool error (`isError: true`): the message and what to change, one line (a value of the caller's
 * quoted in it cannot break it: see untrusted.ts).
 */
export function failure(message: string, hint?: string): CallToolResult {
  const text = visible(hint === undefined ? message : `${message} Hint: ${hint}`)
  return { content: [{ type: 'text', text }], isError: true }
}

/**
 * A refusal the HTTP API would answer with this Error: the same message and hint as text, and the
 * Error itself (`code`, `message`, `hint`) as structured content, so that a program can tell, e.g.,
 * `service_unavailable` or `rate_limited` (retry later) from a refusal of its arguments.
 */
export function apiFailure(error: AppError): CallToolResult {
  return { ...failure(error.message, error.hint), structuredContent: error.toBody() }
}
