/**
 * Pricing estimator: a pure function over a data-driven model (data/pricing.json).
 *
 * For each component c in {design_fee, furnishings, works} and each bound b in {low, high}:
 *
 *   figure(c, b) = round_to_100( rate[level][c][b] × area_sqm × style_factor × city_factor × rooms_factor )
 *   rooms_factor = (1 − weight) + weight × rooms × sqm_per_room / area_sqm
 *   total(b)     = Σ_c figure(c, b)
 *
 * rooms_factor is 1 at the expected density (one room per `sqm_per_room`), and is strictly
 * increasing in rooms: each room adds `weight × sqm_per_room` m² worth of rate (7 m² with the
 * shipped data), which is what extra joinery, doors and lighting plans cost. The estimate is also
 * strictly increasing in area for fixed rooms, since rate × area × rooms_factor
 * = rate × ((1 − weight) × area + weight × sqm_per_room × rooms).
 */
import type { components } from '../../generated/openapi.js'

export type PricingModel = components['schemas']['PricingModel']
export type PriceRange = components['schemas']['PriceRange']
export type ServiceLevel = PricingModel['service_levels'][number]

/**
 * A brief the estimator can price: validated against the brief schema (brief.ts), with names
 * made canonical (the id of the service level; style and city as data/pricing.json spells them).
 */
export interface EstimateInput {
  area_sqm: number
  rooms?: number
  service_level?: string
  style?: string
  city?: string
}

export interface Estimate {
  currency: 'EUR'
  low: number
  high: number
  breakdown: { design_fee: PriceRange; furnishings: PriceRange; works: PriceRange }
  input: { area_sqm: number; rooms: number; service_level: string; style: string | null; city: string | null }
  factors: { style: number; city: number; rooms: number }
  assumptions: string[]
}

export const COMPONENTS = ['design_fee', 'furnishings', 'works'] as const
export type Component = (typeof COMPONENTS)[number]

function roundTo(value: number, step: number): number {
  // Go through whole cents first so binary noise (e.g. 1249.9999999) cannot flip a half-way case.
  const cents = Math.round(value * 100)
  return Math.round(cents / (step * 100)) * step
}

function roundFactor(f: number): number {
  return Math.round(f * 10000) / 10000
}

/** Prices a valid, canonical brief. Pure and deterministic. */
export function estimatePrice(model: PricingModel, input: EstimateInput): Estimate {
  const area = input.area_sqm
  const { min: rMin, max: rMax, sqm_per_room: sqmPerRoom, weight } = model.rooms
  const roomsDefaulted = input.rooms === undefined
  const rooms = input.rooms ?? Math.min(rMax, Math.max(rMin, Math.ceil(area / sqmPerRoom)))
  const levelId = input.service_level ?? model.default_service_level
  const level = model.service_levels.find((l) => l.id === levelId)
  if (!level) throw new Error(`estimatePrice: unknown service level ${levelId} (validate the brief first)`)
  const style = input.style ?? null
  const city = input.city ?? null
  const styleFactor = style === null ? model.style_factors.default : (model.style_factors.styles[style] ?? Number.NaN)
  const cityFactor = city === null ? model.city_factors.default : (model.city_factors.cities[city] ?? Number.NaN)
  if (Number.isNaN(styleFactor) || Number.isNaN(cityFactor))
    throw new Error('estimatePrice: unknown style or city (validate the brief first)')

  const roomsFactor = 1 - weight + (weight * rooms * sqmPerRoom) / area
  const multiplier = area * styleFactor * cityFactor * roomsFactor
  const step = model.rounding.to_nearest

  const breakdown = {} as Estimate['breakdown']
  let low = 0
  let high = 0
  for (const c of COMPONENTS) {
    const rate = level[c]
    const r: PriceRange = { low: roundTo(rate.low * multiplier, step), high: roundTo(rate.high * multiplier, step) }
    breakdown[c] = r
    low += r.low
    high += r.high
  }

  const assumptions = [...model.assumptions.general, level.scope_note]
  if (roomsDefaulted) {
    assumptions.push(model.assumptions.default_rooms.replaceAll('{rooms}', String(rooms)).replaceAll('{sqm_per_room}', String(sqmPerRoom)))
  }

  return {
    currency: 'EUR',
    low,
    high,
    breakdown,
    input: { area_sqm: area, rooms, service_level: level.id, style, city },
    factors: { style: styleFactor, city: cityFactor, rooms: roundFactor(roomsFactor) },
    assumptions,
  }
}

export interface PricingOptions {
  service_levels: { id: string; name: string; description: string }[]
  styles: string[]
  cities: string[]
  default_service_level: string
  area_sqm: { min: number; max: number }
  rooms: { min: number; max: number }
}

/** What the estimator accepts, for building forms and for documentation. */
export function pricingOptions(model: PricingModel): PricingOptions {
  return {
    service_levels: model.service_levels.map(({ id, name, description }) => ({ id, name, description })),
    styles: Object.keys(model.style_factors.styles),
    cities: Object.keys(model.city_factors.cities),
    default_service_level: model.default_service_level,
    area_sqm: { ...model.limits.area_sqm },
    rooms: { min: model.rooms.min, max: model.rooms.max },
  }
}
