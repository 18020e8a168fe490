// The pricing model (data/pricing.json), validated once against the spec's PricingModel schema;
// a bad file stops the server with the key named. What JSON Schema cannot say (ranges in order,
// names distinct as people type them, a default that exists) is checked here, after it.
import { join } from 'node:path'
import { projectRoot } from '../../config.js'
import { compileStrict } from '../../lib/ajv.js'
import type { Spec } from '../../plugins/spec/document.js'
import { dataError } from '../../plugins/validation/messages.js'
import { readUtf8File } from '../../plugins/validation/utf8.js'
import { matchKey } from '../catalogue/names.js'
import { COMPONENTS, type PricingModel } from './estimate.js'

export const pricingFile = join(projectRoot, 'data', 'pricing.json')

function fail(key: string, what: string): never {
  throw new Error(`pricing model: "${key}" ${what}`)
}

/** Validates an untrusted JSON value as a pricing model. Throws an Error naming the offending key. */
export function parsePricingModel(spec: Spec, json: unknown): PricingModel {
  const validate = compileStrict(spec.schema('PricingModel'))
  if (!validate(json)) throw dataError('pricing model', validate.errors ?? [])
  const model = structuredClone(json) as PricingModel

  const area = model.limits.area_sqm
  if (area.max <= area.min) fail('limits.area_sqm.max', `must be > ${area.min}`)
  if (model.rooms.max < model.rooms.min) fail('rooms.max', `must be >= ${model.rooms.min}`)

  const ids = new Set<string>()
  model.service_levels.forEach((level, i) => {
    const base = `service_levels[${i}]`
    if (ids.has(level.id)) fail(`${base}.id`, `is a duplicate (got "${level.id}")`)
    ids.add(level.id)
    for (const c of COMPONENTS) {
      const { low, high } = level[c]
      if (high < low) fail(`${base}.${c}.high`, `must be >= ${base}.${c}.low (${low})`)
      if (low === 0 && high !== 0) fail(`${base}.${c}.low`, 'must be > 0 when high is > 0 (use 0 for both to exclude a component)')
    }
    if (COMPONENTS.every((c) => level[c].high === 0)) fail(base, 'must price at least one component')
  })
  if (!ids.has(model.default_service_level)) {
    fail('default_service_level', `must be one of the service_levels ids (${[...ids].join(', ')}) (got "${model.default_service_level}")`)
  }

  for (const [key, names] of [
    ['style_factors.styles', Object.keys(model.style_factors.styles)],
    ['city_factors.cities', Object.keys(model.city_factors.cities)],
  ] as const) {
    const seen = new Set<string>()
    for (const name of names) {
      if (seen.has(matchKey(name)))
        fail(`${key}.${name}`, 'duplicates another name (names are matched ignoring case, accents and punctuation)')
      seen.add(matchKey(name))
    }
  }
  return model
}

/** Reads and validates the pricing model (data/pricing.json unless another file is given). */
export function loadPricingModel(spec: Spec, file: string = pricingFile): PricingModel {
  let text: string
  try {
    text = readUtf8File(file)
  } catch (err) {
    throw new Error(`pricing model: cannot read ${file}: ${(err as Error).message}`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new Error(`pricing model: ${file} is not valid JSON: ${(err as Error).message}`)
  }
  return parsePricingModel(spec, json)
}
