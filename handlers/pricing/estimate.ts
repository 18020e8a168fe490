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
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { matchKey } from '../names.js'

export interface PriceRange {
  low: number
  high: number
}

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

export class EstimateError extends Error {
  readonly field: string
  readonly hint: string

  constructor(field: string, hint: string) {
    super(`Invalid ${field}: ${hint}`)
    this.name = 'EstimateError'
    this.field = field
    this.hint = hint
  }
}

export const COMPONENTS = ['design_fee', 'furnishings', 'works'] as const
export type Component = (typeof COMPONENTS)[number]

export interface ServiceLevel {
  id: string
  name: string
  description: string
  /** One sentence on what this level leaves out; shown in `assumptions`. */
  scope_note: string
  design_fee: PriceRange
  furnishings: PriceRange
  works: PriceRange
}

export interface PricingModel {
  version: string
  currency: 'EUR'
  default_service_level: string
  limits: { area_sqm: { min: number; max: number } }
  rounding: { to_nearest: number }
  service_levels: ServiceLevel[]
  /** canonical style name -> multiplier; `default` applies when no style is given */
  style_factors: { default: number; styles: Record<string, number> }
  /** canonical city name -> multiplier; `default` applies only when no city is given */
  city_factors: { default: number; cities: Record<string, number> }
  rooms: { min: number; max: number; sqm_per_room: number; weight: number }
  assumptions: { general: string[]; default_rooms: string }
}

// ---------------------------------------------------------------------------
// Model parsing / loading
// ---------------------------------------------------------------------------

function fail(key: string, what: string, ...got: unknown[]): never {
  const suffix = got.length > 0 ? ` (got ${JSON.stringify(got[0]) ?? String(got[0])})` : ''
  throw new Error(`pricing model: "${key}" ${what}${suffix}`)
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function obj(parent: Record<string, unknown>, key: string, path: string): Record<string, unknown> {
  if (!(key in parent)) fail(path, 'is missing')
  const v = parent[key]
  if (!isRecord(v)) fail(path, 'must be an object', v)
  return v
}

function str(parent: Record<string, unknown>, key: string, path: string): string {
  if (!(key in parent)) fail(path, 'is missing')
  const v = parent[key]
  if (typeof v !== 'string' || v.trim() === '') fail(path, 'must be a non-empty string', v)
  return v
}

function num(
  parent: Record<string, unknown>,
  key: string,
  path: string,
  opts: { min?: number; minExclusive?: number; max?: number; maxExclusive?: number; integer?: boolean } = {},
): number {
  if (!(key in parent)) fail(path, 'is missing')
  const v = parent[key]
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(path, 'must be a finite number', v)
  if (opts.integer === true && !Number.isInteger(v)) fail(path, 'must be an integer', v)
  if (opts.min !== undefined && v < opts.min) fail(path, `must be >= ${opts.min}`, v)
  if (opts.minExclusive !== undefined && v <= opts.minExclusive) fail(path, `must be > ${opts.minExclusive}`, v)
  if (opts.max !== undefined && v > opts.max) fail(path, `must be <= ${opts.max}`, v)
  if (opts.maxExclusive !== undefined && v >= opts.maxExclusive) fail(path, `must be < ${opts.maxExclusive}`, v)
  return v
}

function range(parent: Record<string, unknown>, key: string, path: string): PriceRange {
  const r = obj(parent, key, path)
  const low = num(r, 'low', `${path}.low`, { min: 0 })
  const high = num(r, 'high', `${path}.high`, { min: 0 })
  if (high < low) fail(`${path}.high`, `must be >= ${path}.low (${low})`, high)
  if (low === 0 && high !== 0) fail(`${path}.low`, 'must be > 0 when high is > 0 (use 0 for both to exclude a component)', low)
  return { low, high }
}

function factorTable(root: Record<string, unknown>, key: string, listKey: string): { default: number; entries: Record<string, number> } {
  const t = obj(root, key, key)
  const def = num(t, 'default', `${key}.default`, { minExclusive: 0, max: 10 })
  const list = obj(t, listKey, `${key}.${listKey}`)
  const entries: Record<string, number> = Object.create(null) as Record<string, number>
  const seen = new Set<string>()
  for (const name of Object.keys(list)) {
    const path = `${key}.${listKey}.${name}`
    if (name.trim() === '' || name.trim() !== name) fail(path, 'name must be non-empty with no surrounding whitespace')
    const norm = matchKey(name)
    if (seen.has(norm)) fail(path, 'duplicates another name (names are matched ignoring case, accents and punctuation)')
    seen.add(norm)
    entries[name] = num(list, name, path, { minExclusive: 0, max: 10 })
  }
  if (Object.keys(entries).length === 0) fail(`${key}.${listKey}`, 'must list at least one entry')
  return { default: def, entries }
}

/** Validate an untrusted JSON value as a pricing model. Throws an Error naming the offending key. */
export function parsePricingModel(json: unknown): PricingModel {
  if (!isRecord(json)) fail('(root)', 'must be an object', json)

  const version = str(json, 'version', 'version')
  const currency = str(json, 'currency', 'currency')
  if (currency !== 'EUR') fail('currency', 'must be "EUR"', currency)

  const limits = obj(json, 'limits', 'limits')
  const area = obj(limits, 'area_sqm', 'limits.area_sqm')
  const areaMin = num(area, 'min', 'limits.area_sqm.min', { minExclusive: 0 })
  const areaMax = num(area, 'max', 'limits.area_sqm.max', { minExclusive: areaMin })

  const rounding = obj(json, 'rounding', 'rounding')
  const toNearest = num(rounding, 'to_nearest', 'rounding.to_nearest', { min: 1, integer: true })

  if (!('service_levels' in json)) fail('service_levels', 'is missing')
  const rawLevels = json.service_levels
  if (!Array.isArray(rawLevels) || rawLevels.length === 0) fail('service_levels', 'must be a non-empty array', rawLevels)
  const ids = new Set<string>()
  const serviceLevels: ServiceLevel[] = rawLevels.map((raw: unknown, i: number): ServiceLevel => {
    const base = `service_levels[${i}]`
    if (!isRecord(raw)) fail(base, 'must be an object', raw)
    const id = str(raw, 'id', `${base}.id`)
    if (!/^[a-z][a-z0-9-]*$/.test(id)) fail(`${base}.id`, 'must be lower-case kebab-case', id)
    if (ids.has(id)) fail(`${base}.id`, 'is a duplicate', id)
    ids.add(id)
    const level: ServiceLevel = {
      id,
      name: str(raw, 'name', `${base}.name`),
      description: str(raw, 'description', `${base}.description`),
      scope_note: str(raw, 'scope_note', `${base}.scope_note`),
      design_fee: range(raw, 'design_fee', `${base}.design_fee`),
      furnishings: range(raw, 'furnishings', `${base}.furnishings`),
      works: range(raw, 'works', `${base}.works`),
    }
    if (COMPONENTS.every((c) => level[c].high === 0)) fail(base, 'must price at least one component')
    return level
  })

  const defaultLevel = str(json, 'default_service_level', 'default_service_level')
  if (!ids.has(defaultLevel)) {
    fail('default_service_level', `must be one of the service_levels ids (${[...ids].join(', ')})`, defaultLevel)
  }

  const style = factorTable(json, 'style_factors', 'styles')
  const city = factorTable(json, 'city_factors', 'cities')

  const rooms = obj(json, 'rooms', 'rooms')
  const roomsMin = num(rooms, 'min', 'rooms.min', { min: 1, integer: true })
  const roomsMax = num(rooms, 'max', 'rooms.max', { min: roomsMin, integer: true })
  const sqmPerRoom = num(rooms, 'sqm_per_room', 'rooms.sqm_per_room', { minExclusive: 0 })
  // weight in (0, 1): > 0 so the estimate strictly rises with rooms, < 1 so it strictly rises with area.
  const weight = num(rooms, 'weight', 'rooms.weight', { minExclusive: 0, maxExclusive: 1 })

  const assumptions = obj(json, 'assumptions', 'assumptions')
  const general = assumptions.general
  if (!Array.isArray(general) || general.length === 0 || general.length > 2) {
    fail('assumptions.general', 'must be an array of 1-2 sentences', general)
  }
  general.forEach((s: unknown, i: number) => {
    if (typeof s !== 'string' || s.trim() === '') fail(`assumptions.general[${i}]`, 'must be a non-empty string', s)
  })
  const defaultRooms = str(assumptions, 'default_rooms', 'assumptions.default_rooms')

  return {
    version,
    currency: 'EUR',
    default_service_level: defaultLevel,
    limits: { area_sqm: { min: areaMin, max: areaMax } },
    rounding: { to_nearest: toNearest },
    service_levels: serviceLevels,
    style_factors: { default: style.default, styles: style.entries },
    city_factors: { default: city.default, cities: city.entries },
    rooms: { min: roomsMin, max: roomsMax, sqm_per_room: sqmPerRoom, weight },
    assumptions: { general: general as string[], default_rooms: defaultRooms },
  }
}

/**
 * Read and validate the pricing model. Without a path, looks for data/pricing.json relative to this
 * module, both from source (handlers/pricing/) and from the compiled output (dist/handlers/pricing/).
 */
export function loadPricingModel(path?: string): PricingModel {
  const candidates =
    path !== undefined
      ? [path]
      : [
          fileURLToPath(new URL('../../data/pricing.json', import.meta.url)),
          fileURLToPath(new URL('../../../data/pricing.json', import.meta.url)),
        ]
  let lastError: unknown
  for (const file of candidates) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      lastError = err
      continue
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (err) {
      throw new Error(`pricing model: ${file} is not valid JSON: ${(err as Error).message}`)
    }
    return parsePricingModel(json)
  }
  throw new Error(
    `pricing model: cannot read ${candidates.join(' or ')}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  )
}

// ---------------------------------------------------------------------------
// Estimation (pure)
// ---------------------------------------------------------------------------

function lookup(table: Record<string, number>, fallback: number, field: string, value: unknown): { name: string | null; factor: number } {
  if (value === undefined || value === null) return { name: null, factor: fallback }
  const names = Object.keys(table)
  const hint = `${field} must be one of: ${names.join(', ')} (or omitted)`
  if (typeof value !== 'string') throw new EstimateError(field, hint)
  const wanted = matchKey(value)
  const name = wanted === '' ? undefined : names.find((n) => matchKey(n) === wanted)
  const factor = name === undefined ? undefined : table[name]
  if (name === undefined || factor === undefined) {
    throw new EstimateError(field, `unknown ${field} ${JSON.stringify(value)}; ${hint}`)
  }
  return { name, factor }
}

function roundTo(value: number, step: number): number {
  // Go through whole cents first so binary noise (e.g. 1249.9999999) cannot flip a half-way case.
  const cents = Math.round(value * 100)
  return Math.round(cents / (step * 100)) * step
}

function roundFactor(f: number): number {
  return Math.round(f * 10000) / 10000
}

/** Estimate a project budget range. Pure and deterministic; throws EstimateError on invalid input. */
export function estimatePrice(model: PricingModel, input: EstimateInput): Estimate {
  if (!isRecord(input)) throw new EstimateError('input', 'the request must be an object with at least area_sqm')

  // area_sqm
  const { min: aMin, max: aMax } = model.limits.area_sqm
  const area = input.area_sqm as unknown
  if (typeof area !== 'number' || !Number.isFinite(area) || area < aMin || area > aMax) {
    throw new EstimateError('area_sqm', `area_sqm must be a number between ${aMin} and ${aMax} (square metres)`)
  }

  // rooms
  const { min: rMin, max: rMax, sqm_per_room: sqmPerRoom, weight } = model.rooms
  const rawRooms = input.rooms as unknown
  let rooms: number
  let roomsDefaulted = false
  if (rawRooms === undefined || rawRooms === null) {
    rooms = Math.min(rMax, Math.max(rMin, Math.ceil(area / sqmPerRoom)))
    roomsDefaulted = true
  } else if (typeof rawRooms !== 'number' || !Number.isInteger(rawRooms) || rawRooms < rMin || rawRooms > rMax) {
    throw new EstimateError('rooms', `rooms must be a whole number between ${rMin} and ${rMax} (or omitted)`)
  } else {
    rooms = rawRooms
  }

  // service_level
  const rawLevel = input.service_level as unknown
  const levelIds = model.service_levels.map((l) => l.id)
  let level: ServiceLevel | undefined
  if (rawLevel === undefined || rawLevel === null) {
    level = model.service_levels.find((l) => l.id === model.default_service_level)
  } else if (typeof rawLevel === 'string') {
    // Accept the id or the display name ("Full Service", "full_service", "FULL-SERVICE").
    const wanted = matchKey(rawLevel)
    level = wanted === '' ? undefined : model.service_levels.find((l) => matchKey(l.id) === wanted || matchKey(l.name) === wanted)
  }
  if (level === undefined) {
    const what = typeof rawLevel === 'string' ? `unknown service_level ${JSON.stringify(rawLevel)}; ` : ''
    throw new EstimateError(
      'service_level',
      `${what}service_level must be one of: ${levelIds.join(', ')} (or omitted for ${model.default_service_level})`,
    )
  }

  const style = lookup(model.style_factors.styles, model.style_factors.default, 'style', input.style)
  const city = lookup(model.city_factors.cities, model.city_factors.default, 'city', input.city)

  const roomsFactor = 1 - weight + (weight * rooms * sqmPerRoom) / area
  const multiplier = area * style.factor * city.factor * roomsFactor
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
    input: { area_sqm: area, rooms, service_level: level.id, style: style.name, city: city.name },
    factors: { style: style.factor, city: city.factor, rooms: roundFactor(roomsFactor) },
    assumptions,
  }
}

/** What the estimator accepts, for building forms and for documentation. */
export function pricingOptions(model: PricingModel): {
  service_levels: { id: string; name: string; description: string }[]
  styles: string[]
  cities: string[]
  default_service_level: string
  area_sqm: { min: number; max: number }
  rooms: { min: number; max: number }
} {
  return {
    service_levels: model.service_levels.map(({ id, name, description }) => ({ id, name, description })),
    styles: Object.keys(model.style_factors.styles),
    cities: Object.keys(model.city_factors.cities),
    default_service_level: model.default_service_level,
    area_sqm: { ...model.limits.area_sqm },
    rooms: { min: model.rooms.min, max: model.rooms.max },
  }
}
