// What the two pricing tools share: the input schema (built from the pricing model, so the
// allowed values are those of data/pricing.json) and a plain-text rendering of an estimate.
import * as z from 'zod'
import { type Estimate, type EstimateInput, type PricingModel, pricingOptions } from '../pricing/estimate.js'
import { defined } from './types.js'

/** Area used by show_pricing_estimator when none is given (a typical family apartment). */
export const DEFAULT_AREA_SQM = 120

export function estimateFields(model: PricingModel) {
  const o = pricingOptions(model)
  return {
    area_sqm: z.number().describe(`Floor area in square metres, between ${o.area_sqm.min} and ${o.area_sqm.max}.`),
    rooms: z
      .number()
      .optional()
      .describe(`Number of rooms, a whole number between ${o.rooms.min} and ${o.rooms.max}; estimated from the area when omitted.`),
    service_level: z
      .string()
      .max(100)
      .optional()
      .describe(
        `Service level, by id or name: ${o.service_levels.map((l) => `${l.id} ("${l.name}": ${l.description})`).join('; ')}. Default ${o.default_service_level}.`,
      ),
    style: z
      .string()
      .max(100)
      .optional()
      .describe(`Design style (case-insensitive), one of: ${o.styles.join(', ')}; omit if undecided.`),
    city: z
      .string()
      .max(100)
      .optional()
      .describe(`City of the project (case-insensitive), one of: ${o.cities.join(', ')}; omit for anywhere else.`),
  }
}

/** The estimator's input from tool arguments, without the keys that were not given. */
export function estimateInput(args: {
  area_sqm: number
  rooms?: number | undefined
  service_level?: string | undefined
  style?: string | undefined
  city?: string | undefined
}): EstimateInput {
  return {
    area_sqm: args.area_sqm,
    ...defined({ rooms: args.rooms, service_level: args.service_level, style: args.style, city: args.city }),
  }
}

function money(value: number, currency: string): string {
  return new Intl.NumberFormat('en-GB', { style: 'currency', currency, maximumFractionDigits: 0 }).format(value)
}

function range(r: { low: number; high: number }, currency: string): string {
  return r.high === 0 ? 'not included' : `${money(r.low, currency)} – ${money(r.high, currency)}`
}

export function estimateText(e: Estimate, model: PricingModel): string {
  const level = model.service_levels.find((l) => l.id === e.input.service_level)?.name ?? e.input.service_level
  const what = [`${e.input.area_sqm} m²`, `${e.input.rooms} room${e.input.rooms === 1 ? '' : 's'}`, level, e.input.style, e.input.city]
    .filter((s): s is string => typeof s === 'string')
    .join(', ')
  return [
    `Indicative budget for ${what}: ${range(e, e.currency)} (${e.currency}).`,
    `Design fee: ${range(e.breakdown.design_fee, e.currency)}; furnishings: ${range(e.breakdown.furnishings, e.currency)}; works: ${range(e.breakdown.works, e.currency)}.`,
    `Assumptions: ${e.assumptions.join(' ')}`,
  ].join('\n')
}
