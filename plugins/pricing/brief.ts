// The brief the estimator accepts: the spec's EstimateBrief with the ranges and the names of the
// pricing model added (so the MCP tools' inputSchema says exactly what is accepted), names made
// canonical first (case, accents and punctuation do not matter), then validated by the one Ajv.
import { matchKey } from '../catalogue/names.js'
import type { JsonSchema, Spec } from '../spec/document.js'
import type { EstimateInput, PricingModel } from './estimate.js'

type Properties = Record<string, JsonSchema>

/** The EstimateBrief schema narrowed to this model. */
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
    enum: levels.map((l) => l.id),
    description: `${props.service_level?.description} ${levels.map((l) => `${l.id} ("${l.name}": ${l.description})`).join('; ')}. Default ${model.default_service_level}.`,
    'x-hint': `service_level must be one of: ${levels.map((l) => l.id).join(', ')} (or omitted for ${model.default_service_level})`,
  })
  narrow('style', { enum: styles, 'x-hint': `style must be one of: ${styles.join(', ')} (or omitted)` })
  narrow('city', { enum: cities, 'x-hint': `city must be one of: ${cities.join(', ')} (or omitted)` })
  return base
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
