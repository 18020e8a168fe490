// Every MCP tool the server offers, in the order tools/list shows them (app.ts passes this list to
// the MCP plugin).
import type { ToolModule } from '../../features/mcp/tool.js'
import type { Deps } from '../deps.js'
import { estimatePriceTool } from './estimate-price.js'
import { listProjects } from './list-projects.js'
import { recentLeads } from './recent-leads.js'
import { requestConsultation } from './request-consultation.js'
import { showPlaybook } from './show-playbook.js'
import { showPricingEstimator } from './show-pricing-estimator.js'

export const TOOLS: readonly ToolModule<Deps>[] = [
  showPlaybook,
  showPricingEstimator,
  estimatePriceTool,
  listProjects,
  requestConsultation,
  recentLeads,
]
