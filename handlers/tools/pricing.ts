// What the two pricing tools share: a plain-text rendering of an estimate, for hosts without UI.
import type { Estimate, PricingModel } from '../../features/pricing/index.js'

/** Area used by show_pricing_estimator when none is given (a typical family apartment). */
export const DEFAULT_AREA_SQM = 120

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
