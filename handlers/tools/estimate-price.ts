// estimate_price: a budget range from the pricing model. Also called by the pricing-estimator
// view as the user changes the form (visible to the model and to the app).
import { success, type ToolModule } from '../../features/mcp/tool.js'
import type { Deps } from '../deps.js'
import { estimateText } from './pricing.js'

export const estimatePriceTool: ToolModule<Deps> = {
  name: 'estimate_price',
  title: 'Estimate a project budget',
  description:
    'Estimate the budget range (EUR) of an interior design project from its floor area and, optionally, rooms, service level, style and city. ' +
    'Returns the low/high total, a breakdown into design fee, furnishings and works, the factors applied and the assumptions.',
  inputSchema: ({ pricing }) => pricing.briefSchema,
  canonical: ({ pricing }, args) => pricing.canonical(args),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  ui: { visibility: ['model', 'app'] },
  async run({ pricing }, args) {
    const estimate = pricing.estimate(args)
    return success(estimateText(estimate, pricing.model), estimate)
  },
}
