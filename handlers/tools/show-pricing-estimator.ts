// show_pricing_estimator: an estimate and the estimator's options, rendered in the interactive
// pricing-estimator view (which re-prices through estimate_price as the user edits the form).
import * as z from 'zod'
import { EstimateError, estimatePrice, pricingOptions } from '../pricing/estimate.js'
import { DEFAULT_AREA_SQM, estimateFields, estimateInput, estimateText } from './pricing.js'
import { failure, success, type ToolModule } from './types.js'

const schema = (fields: ReturnType<typeof estimateFields>) =>
  z.object({
    ...fields,
    area_sqm: fields.area_sqm.optional().describe(`${fields.area_sqm.description ?? ''} Default ${DEFAULT_AREA_SQM}.`),
  })

export const showPricingEstimator: ToolModule<ReturnType<typeof schema>> = {
  name: 'show_pricing_estimator',
  title: 'Pricing estimator',
  description:
    'Open the interactive pricing estimator, pre-filled with whatever is known about the project (area, rooms, service level, style, city), ' +
    'with a first estimate. Hosts without MCP Apps get the estimate as text.',
  schema: ({ pricing }) => schema(estimateFields(pricing)),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  ui: { view: 'pricing-estimator' },
  async run({ pricing }, args) {
    try {
      const estimate = estimatePrice(pricing, estimateInput({ ...args, area_sqm: args.area_sqm ?? DEFAULT_AREA_SQM }))
      const options = pricingOptions(pricing)
      const text = `${estimateText(estimate, pricing)}\nAdjust area, rooms, service level (${options.service_levels.map((l) => l.name).join(', ')}), style and city in the estimator to compare.`
      return success(text, { input: estimate.input, estimate, options })
    } catch (err) {
      if (err instanceof EstimateError) return failure(err.message, err.hint)
      throw err
    }
  },
}
