// The brief the estimator accepts: the spec's EstimateBrief with the ranges and the names of the
// pricing model added. Two schemas of one brief: `briefSchema`, what the MCP tools advertise and
// what a host may check arguments against, says exactly what is accepted: names in any case, with
// or without accents and punctuation ("mid century", "TURNKEY"), and null for an optional value;
// `canonicalSchema`, what the estimator checks once names are made canonical (canonicalBrief),
// allows only the model's names. So a host that validates arguments never refuses what the
// estimator accepts, and a name that is none of the model's is refused by the estimator with the
// list of names.

import type { JsonSchema, Spec } from '../../plugins/spec/document.js'
import { matchKey } from '../catalogue/names.js'
import type { EstimateInput, PricingModel } from './estimate.js'

type Properties = Record<string, JsonSchema>

/** How a name may be given: the model's, in any case, accents and punctuation (matchKey). */
const ANY_SPELLING = '(case, accents, spaces and punctuation do not matter)'

/** Optional values may be null (canonicalBrief treats null as absent, as JSON clients send it). */
function nullable(schema: JsonSchema | undefined): JsonSchema {
  const type = schema?.type
  return { ...schema, type: [...(Array.isArray(type) ? type : [type]), 'null'] }
}

/** The EstimateBrief schema narrowed to this model, as advertised: names in any spelling, optional values nullable. */
export function briefSchema(spec: Spec, model: PricingModel): JsonSchema {
  const base = structuredClone(spec.schema('EstimateBrief'))
  const props = base.properties as Properties
  const { min: aMin, max: aMax } = model.limits.area_sqm
  const { min: rMin, max: rMax } = model.rooms
  const levels = model.service_levels
  const styles = Object.keys(model.style_factors.styles)
  const cities = Object.keys(model.city_factors.cities)
  const narrow = (name: string, extra: JsonSchema) => {
    props[name] = { ...props[name], ...extra }
  }
  narrow('area_sqm', {
    minimum: aMin,
    maximum: aMax,
    description: `${props.area_sqm?.description} Between ${aMin} and ${aMax}.`,
    'x-hint': `area_sqm must be a number between ${aMin} and ${aMax} (square metres)`,
  })
  narrow('rooms', {
    minimum: rMin,
    maximum: rMax,
    description: `${props.rooms?.description} A whole number between ${rMin} and ${rMax}.`,
    'x-hint': `rooms must be a whole number between ${rMin} and ${rMax} (or omitted)`,
  })
  narrow('service_level', {
    examples: levels.map((l) => l.id),
    description: `${props.service_level?.description} ${levels.map((l) => `${l.id} ("${l.name}": ${l.description})`).join('; ')} ${ANY_SPELLING}. Default ${model.default_service_level}.`,
  })
  narrow('style', {
    examples: styles,
    description: `${props.style?.description} One of: ${styles.join(', ')} ${ANY_SPELLING}.`,
  })
  narrow('city', {
    examples: cities,
    description: `${props.city?.description} One of: ${cities.join(', ')} ${ANY_SPELLING}.`,
  })
  const required = new Set((base.required as string[] | undefined) ?? [])
  for (const name of Object.keys(props)) if (!required.has(name)) props[name] = nullable(props[name])
  return base
}

/** The brief as the estimator checks it once names are canonical: the model's names only. */
export function canonicalSchema(brief: JsonSchema, model: PricingModel): JsonSchema {
  const props = { ...(brief.properties as Properties) }
  const levels = model.service_levels.map((l) => l.id)
  const styles = Object.keys(model.style_factors.styles)
  const cities = Object.keys(model.city_factors.cities)
  const only = (name: string, names: string[], hint: string) => {
    const { examples: _examples, type: _type, ...rest } = props[name] ?? {}
    props[name] = { ...rest, type: 'string', enum: names, 'x-hint': hint }
  }
  only('service_level', levels, `service_level must be one of: ${levels.join(', ')} (or omitted for ${model.default_service_level})`)
  only('style', styles, `style must be one of: ${styles.join(', ')} (or omitted)`)
  only('city', cities, `city must be one of: ${cities.join(', ')} (or omitted)`)
  return { ...brief, properties: props }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The brief with names as the model spells them ("mid century" → "Mid-Century Modern", "Full
 * Service" → "full-service") and null treated as absent, as JSON clients send it. Anything it
 * does not recognise is left as it is, for the schema to refuse. The input is not modified.
 */
export function canonicalBrief(model: PricingModel, input: unknown): unknown {
  if (!isRecord(input)) return input
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) if (value !== null) out[key] = value
  const canonical = (names: readonly string[], value: unknown, alias: (name: string) => string[] = (n) => [n]) => {
    if (typeof value !== 'string') return value
    const want = matchKey(value)
    return (want !== '' && names.find((n) => alias(n).some((a) => matchKey(a) === want))) || value
  }
  if ('service_level' in out) {
    out.service_level = canonical(
      model.service_levels.map((l) => l.id),
      out.service_level,
      (id) => [id, model.service_levels.find((l) => l.id === id)?.name ?? id],
    )
  }
  if ('style' in out) out.style = canonical(Object.keys(model.style_factors.styles), out.style)
  if ('city' in out) out.city = canonical(Object.keys(model.city_factors.cities), out.city)
  return out as unknown as EstimateInput
}
