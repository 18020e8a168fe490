// show_pricing_estimator: an estimate and the estimator's options, rendered in the interactive
// pricing-estimator view (which re-prices through estimate_price as the user edits the form).
import { success, type ToolModule } from '../../features/mcp/tool.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import type { Deps } from '../deps.js'
import { DEFAULT_AREA_SQM, estimateText } from './pricing.js'

export const showPricingEstimator: ToolModule<Deps> = {
  name: 'show_pricing_estimator',
  title: 'Pricing estimator',
  description:
    'Open the interactive pricing estimator, pre-filled with whatever is known about the project (area, rooms, service level, style, city), ' +
    'with a first estimate. Hosts without MCP Apps get the estimate as text.',
  // The brief, with the area optional (the estimator opens on a typical apartment), so nullable
  // like the brief's other optional values.
  inputSchema: ({ pricing }) => {
    const { required: _required, ...brief } = pricing.briefSchema
    const area = (brief.properties as Record<string, JsonSchema>).area_sqm
    return {
      ...brief,
      properties: {
        ...(brief.properties as object),
        area_sqm: { ...area, type: ['number', 'null'], description: `${area?.description} Default ${DEFAULT_AREA_SQM}.` },
      },
    }
  },
  canonical: ({ pricing }, args) => pricing.canonical(args),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  ui: { view: 'pricing-estimator' },
  async run({ pricing }, args) {
    const estimate = pricing.estimate({ ...args, area_sqm: args.area_sqm ?? DEFAULT_AREA_SQM })
    const options = pricing.options
    const text = `${estimateText(estimate, pricing.model)}\nAdjust area, rooms, service level (${options.service_levels.map((l) => l.name).join(', ')}), style and city in the estimator to compare.`
    return success(text, { input: estimate.input, estimate, options })
  },
}
