// What MCP tool handlers are given (services, not Fastify) and what they return. The plugin
// (plugins/mcp/) registers each ToolModule with the MCP server, gates its scope, and turns
// anything a tool throws into a tool error that never shows internals.
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/server'
import type * as z from 'zod'
import type { Config } from '../../config.js'
import type { Catalogue } from '../../plugins/catalogue.js'
import type { LeadIntake } from '../leads/intake.js'
import type { PricingModel } from '../pricing/estimate.js'
import type { Playbook } from './playbook.js'

export interface ToolDeps {
  config: Config
  catalogue: Catalogue
  intake: LeadIntake
  pricing: PricingModel
  playbook: Playbook
}

/** The verified caller of a tool (from the bearer token). */
export interface Caller {
  clientId: string
}

/** The MCP app views (ui:// resources) a tool can render in. */
export type ViewName = 'playbook' | 'pricing-estimator'

export interface ToolModule<S extends z.ZodObject = z.ZodObject> {
  name: string
  title: string
  description: string
  /** The input schema; built once at start-up from the data (e.g. the pricing model's options). */
  schema(deps: ToolDeps): S
  annotations: ToolAnnotations
  /** The OAuth scope a token needs to call this tool (none: any valid token). */
  scope?: string
  /** MCP Apps metadata: the view the result renders in, and who may call the tool. */
  ui?: { view?: ViewName; visibility?: ('model' | 'app')[] }
  /** Runs the tool. Invalid input is answered with `failure(...)` (or by throwing ToolFailure). */
  run(deps: ToolDeps, args: z.output<S>, caller: Caller): Promise<CallToolResult>
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

/** A tool error (`isError: true`): the message and what to change. */
export function failure(message: string, hint?: string): CallToolResult {
  const text = hint === undefined ? message : `${message} Hint: ${hint}`
  return { content: [{ type: 'text', text }], isError: true }
}

/** Only the keys whose value is defined (exactOptionalPropertyTypes-friendly). */
export function defined<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }
}
