// Every MCP tool the server offers, in the order tools/list shows them.

import { ALL_SCOPES } from '../../plugins/auth/rules.js'
import { estimatePriceTool } from './estimate-price.js'
import { listProjects } from './list-projects.js'
import { requestConsultation } from './request-consultation.js'
import { showPlaybook } from './show-playbook.js'
import { showPricingEstimator } from './show-pricing-estimator.js'
import type { ToolModule } from './types.js'

export const TOOLS: readonly ToolModule[] = [showPlaybook, showPricingEstimator, estimatePriceTool, listProjects, requestConsultation]

for (const tool of TOOLS) {
  if (tool.scope !== undefined && !ALL_SCOPES.includes(tool.scope)) {
    throw new Error(`tool ${tool.name} needs the scope ${tool.scope}, which the spec does not declare`)
  }
}

/** The scope each tool needs, by name (tools without one need any valid token). */
export const TOOL_SCOPES: ReadonlyMap<string, string> = new Map(
  TOOLS.flatMap((t) => (t.scope === undefined ? [] : [[t.name, t.scope] as const])),
)

export type { Caller, ToolDeps, ToolModule, ViewName } from './types.js'
