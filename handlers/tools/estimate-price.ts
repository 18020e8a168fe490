// estimate_price: a budget range from the pricing model. Also called by the pricing-estimator
// view as the user changes the form (visible to the model and to the app).
import * as z from 'zod'
import { EstimateError, estimatePrice } from '../pricing/estimate.js'
import { estimateFields, estimateInput, estimateText } from './pricing.js'
import { failure, success, type ToolModule } from './types.js'

const schema = (fields: ReturnType<typeof estimateFields>) => z.object(fields)

export const estimatePriceTool: ToolModule<ReturnType<typeof schema>> = {
  name: 'estimate_price',
  title: 'Estimate a project budget',
  description:
    'Estimate the budget range (EUR) of an interior design project from its floor area and, optionally, rooms, service level, style and city. ' +
    'Returns the low/high total, a breakdown into design fee, furnishings and works, the factors applied and the assumptions.',
  schema: ({ pricing }) => schema(estimateFields(pricing)),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  ui: { visibility: ['model', 'app'] },
  async run({ pricing }, args) {
    try {
      const estimate = estimatePrice(pricing, estimateInput(args))
      return success(estimateText(estimate, pricing), estimate)
    } catch (err) {
      if (err instanceof EstimateError) return failure(err.message, err.hint)
      throw err
    }
  },
}
