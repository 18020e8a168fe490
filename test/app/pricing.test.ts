import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { type Estimate, type EstimateInput, pricingOptions } from '../../features/pricing/estimate.js'
import { EstimateError, Pricing, type PricingModel } from '../../features/pricing/index.js'
import { loadPricingModel as loadModel, parsePricingModel as parseModel } from '../../features/pricing/model.js'
import { spec } from '../helpers/app.js'

// The model is validated against the spec's PricingModel schema: the spec is the tests' own copy.
const loadPricingModel = (file?: string): PricingModel => loadModel(spec, file)
const parsePricingModel = (json: unknown): PricingModel => parseModel(spec, json)

const DATA_PATH = fileURLToPath(new URL('../../data/pricing.json', import.meta.url))
const rawJson = (): Record<string, unknown> => JSON.parse(readFileSync(DATA_PATH, 'utf8')) as Record<string, unknown>
const model: PricingModel = loadPricingModel()
const pricing = new Pricing(spec, model)
const opts = pricingOptions(model)

const LEVELS = ['consultation', 'design', 'full-service', 'turnkey']
const STYLES = [
  'Japandi',
  'Quiet Luxury',
  'Mid-Century Modern',
  'Art Deco Revival',
  'Wabi-Sabi',
  'Mediterranean Modern',
  'Scandinavian Minimalism',
  'Industrial Loft',
]
const CITIES = [
  'London',
  'Paris',
  'Milan',
  'Como',
  'Copenhagen',
  'Kyoto',
  'Lisbon',
  'New York',
  'Barcelona',
  'Dubai',
  'Geneva',
  // Every city of the catalogue is priced (test/app/data.test.ts checks the files agree).
  'Berlin',
  'Deià',
  'Los Angeles',
  'Stockholm',
  'Tokyo',
]

const est = (input: EstimateInput): Estimate => pricing.estimate(input)
const factorOf = (table: Record<string, number>, name: string): number => {
  const f = table[name]
  if (f === undefined) throw new Error(`no factor for ${name}`)
  return f
}
const minOf = (xs: number[]): number => Math.min(...xs)
const cheapestStyle = STYLES.reduce((a, b) => (factorOf(model.style_factors.styles, b) < factorOf(model.style_factors.styles, a) ? b : a))
const cheapestCity = CITIES.reduce((a, b) => (factorOf(model.city_factors.cities, b) < factorOf(model.city_factors.cities, a) ? b : a))
const dearestStyle = STYLES.reduce((a, b) => (factorOf(model.style_factors.styles, b) > factorOf(model.style_factors.styles, a) ? b : a))
const dearestCity = CITIES.reduce((a, b) => (factorOf(model.city_factors.cities, b) > factorOf(model.city_factors.cities, a) ? b : a))

/** A spread of inputs covering the corners of the domain, for the invariant checks. */
function corpus(): EstimateInput[] {
  const out: EstimateInput[] = []
  for (const service_level of LEVELS)
    for (const area_sqm of [10, 10.5, 35, 36, 99.9, 140, 1000, 1750, 4321, 10000])
      for (const rooms of [undefined, 1, 7, 50])
        for (const [style, city] of [
          [undefined, undefined],
          [cheapestStyle, cheapestCity],
          [dearestStyle, dearestCity],
        ] as const) {
          const input: EstimateInput = { area_sqm, service_level }
          if (rooms !== undefined) input.rooms = rooms
          if (style !== undefined) input.style = style
          if (city !== undefined) input.city = city
          out.push(input)
        }
  return out
}

t.test('shipped data file', async (t) => {
  t.same([...opts.service_levels.map((l) => l.id)], LEVELS, 'four service levels, in ascending order of scope')
  t.same([...opts.styles].sort(), [...STYLES].sort(), 'all eight styles are priced')
  t.same([...opts.cities].sort(), [...CITIES].sort(), 'all required cities are priced')
  t.equal(opts.default_service_level, 'full-service')
  t.same(opts.area_sqm, { min: 10, max: 10000 })
  t.same(opts.rooms, { min: 1, max: 50 })
  t.equal(model.currency, 'EUR')
  t.equal(model.rounding.to_nearest, 100)
  t.equal(model.style_factors.default, 1)
  t.equal(model.city_factors.default, 1)
  for (const s of STYLES) {
    const f = factorOf(model.style_factors.styles, s)
    t.ok(f >= 0.9 && f <= 1.3, `${s} factor ${f} is in a sane band`)
  }
  t.ok(
    factorOf(model.style_factors.styles, 'Art Deco Revival') > factorOf(model.style_factors.styles, 'Japandi') &&
      factorOf(model.style_factors.styles, 'Quiet Luxury') > factorOf(model.style_factors.styles, 'Japandi'),
    'Art Deco Revival and Quiet Luxury are among the dearer styles',
  )
  // consultation/design exclude furnishings and works; turnkey includes everything
  for (const id of ['consultation', 'design']) {
    const l = model.service_levels.find((x) => x.id === id)
    t.same(
      [l?.furnishings, l?.works],
      [
        { low: 0, high: 0 },
        { low: 0, high: 0 },
      ],
      `${id} excludes furnishings and works`,
    )
  }
  const turnkey = model.service_levels.find((x) => x.id === 'turnkey')
  t.ok(turnkey !== undefined && turnkey.works.low > 0 && turnkey.furnishings.low > 0, 'turnkey prices works and furnishings')

  t.same(parsePricingModel(rawJson()), model, 'parsePricingModel(raw JSON) equals loadPricingModel()')
  t.same(loadPricingModel(DATA_PATH), model, 'an explicit path works too')
  t.throws(() => loadPricingModel('/nonexistent/pricing.json'), /cannot read \/nonexistent\/pricing\.json/)
})

t.test('parsePricingModel rejects broken models, naming the key', async (t) => {
  // biome-ignore lint/suspicious/noExplicitAny: test mutates arbitrary JSON paths
  const mutate = (f: (j: Record<string, any>) => void): Record<string, unknown> => {
    const j = rawJson()
    f(j)
    return j
  }
  const cases: [string, Record<string, unknown> | unknown, RegExp][] = [
    ['not an object', [], /\(root\)/],
    ['missing rooms', mutate((j) => delete j.rooms), /"rooms" is missing/],
    ['missing service_levels', mutate((j) => delete j.service_levels), /"service_levels" is missing/],
    ['missing city default', mutate((j) => delete j.city_factors.default), /"city_factors\.default" is missing/],
    ['missing works range', mutate((j) => delete j.service_levels[3].works), /"service_levels\[3\]\.works" is missing/],
    [
      'negative rate',
      mutate((j) => (j.service_levels[2].furnishings.low = -5)),
      /"service_levels\[2\]\.furnishings\.low" must be >= 0 \(got -5\)/,
    ],
    ['high below low', mutate((j) => (j.service_levels[0].design_fee.high = 1)), /"service_levels\[0\]\.design_fee\.high"/],
    [
      'string rate',
      mutate((j) => (j.service_levels[1].design_fee.low = '90')),
      /"service_levels\[1\]\.design_fee\.low" must be a finite number/,
    ],
    ['zero style factor', mutate((j) => (j.style_factors.styles.Japandi = 0)), /"style_factors\.styles\.Japandi" must be > 0/],
    ['unknown default level', mutate((j) => (j.default_service_level = 'deluxe')), /"default_service_level"/],
    ['duplicate level id', mutate((j) => (j.service_levels[1].id = 'consultation')), /"service_levels\[1\]\.id" is a duplicate/],
    ['room weight of 1', mutate((j) => (j.rooms.weight = 1)), /"rooms\.weight" must be < 1/],
    ['area max below min', mutate((j) => (j.limits.area_sqm.max = 5)), /"limits\.area_sqm\.max"/],
    ['non-EUR currency', mutate((j) => (j.currency = 'USD')), /"currency" must be "EUR"/],
    ['case-duplicate city', mutate((j) => (j.city_factors.cities.paris = 1.2)), /"city_factors\.cities\.paris" duplicates/],
  ]
  for (const [name, json, re] of cases) {
    t.throws(() => parsePricingModel(json), re, name)
  }
})

t.test('worked example (also in data/pricing.md)', async (t) => {
  // 140 m², 5 rooms, turnkey, Japandi, Milan.
  //   style factor 1.08 (Japandi), city factor 1.10 (Milan)
  //   rooms factor = 0.8 + 0.2 × 5 × 35 / 140 = 0.8 + 0.25 = 1.05
  //   effective area = 140 × 1.08 × 1.10 × 1.05 = 140 × 1.2474 = 174.636 m²
  //   design fee   180 × 174.636 =  31 434.48 →  31 400   280 × 174.636 =  48 898.08 →  48 900
  //   furnishings  700 × 174.636 = 122 245.20 → 122 200  1400 × 174.636 = 244 490.40 → 244 500
  //   works        900 × 174.636 = 157 172.40 → 157 200  1800 × 174.636 = 314 344.80 → 314 300
  //   total low  = 31 400 + 122 200 + 157 200 = 310 800
  //   total high = 48 900 + 244 500 + 314 300 = 607 700
  const e = est({ area_sqm: 140, rooms: 5, service_level: 'turnkey', style: 'Japandi', city: 'Milan' })
  t.same(e.breakdown, {
    design_fee: { low: 31400, high: 48900 },
    furnishings: { low: 122200, high: 244500 },
    works: { low: 157200, high: 314300 },
  })
  t.equal(e.low, 310800)
  t.equal(e.high, 607700)
  t.same(e.factors, { style: 1.08, city: 1.1, rooms: 1.05 })
  t.same(e.input, { area_sqm: 140, rooms: 5, service_level: 'turnkey', style: 'Japandi', city: 'Milan' })
  t.equal(e.currency, 'EUR')

  const md = readFileSync(fileURLToPath(new URL('../../data/pricing.md', import.meta.url)), 'utf8')
  for (const figure of ['310 800', '607 700', '31 400', '48 900', '122 200', '244 500', '157 200', '314 300', '174.636', '1.05']) {
    t.ok(md.includes(figure), `pricing.md shows ${figure}`)
  }
})

t.test('default example: 85 m², nothing else given', async (t) => {
  // rooms default = ceil(85 / 35) = 3; rooms factor = 0.8 + 0.2 × 3 × 35 / 85 = 0.8 + 21/85 = 1.047058…
  // effective area = 85 × 1.047058… = 68 + 21 = 89 m² (exactly: 0.8 × 85 + 0.2 × 35 × 3)
  // full-service: design 140 × 89 = 12 460 → 12 500, 220 × 89 = 19 580 → 19 600
  //               furnishings 600 × 89 = 53 400, 1200 × 89 = 106 800; works 0
  const e = est({ area_sqm: 85 })
  t.same(e.input, { area_sqm: 85, rooms: 3, service_level: 'full-service', style: null, city: null })
  t.same(e.factors, { style: 1, city: 1, rooms: 1.0471 })
  t.same(e.breakdown, {
    design_fee: { low: 12500, high: 19600 },
    furnishings: { low: 53400, high: 106800 },
    works: { low: 0, high: 0 },
  })
  t.same([e.low, e.high], [65900, 126400])
  t.ok(
    e.assumptions.some((a) => /3 rooms were assumed/.test(a)),
    'says the room count was assumed',
  )
})

t.test('invariants: low < high, total = sum of breakdown, rounding to 100', async (t) => {
  let checked = 0
  for (const input of corpus()) {
    const e = est(input)
    const parts = [e.breakdown.design_fee, e.breakdown.furnishings, e.breakdown.works]
    const label = JSON.stringify(input)
    if (!(e.low < e.high)) t.fail(`low < high for ${label}`)
    if (e.low <= 0) t.fail(`positive total for ${label}`)
    for (const p of parts) {
      if (p.low % 100 !== 0 || p.high % 100 !== 0) t.fail(`rounded to 100 for ${label}`)
      if (!(p.low === 0 && p.high === 0) && !(p.low > 0 && p.low < p.high)) t.fail(`0 < low < high per component for ${label}`)
    }
    if (e.low !== parts.reduce((s, p) => s + p.low, 0)) t.fail(`low = sum for ${label}`)
    if (e.high !== parts.reduce((s, p) => s + p.high, 0)) t.fail(`high = sum for ${label}`)
    if (e.low % 100 !== 0 || e.high % 100 !== 0) t.fail(`total rounded for ${label}`)
    if (e.assumptions.length < 2 || e.assumptions.length > 4) t.fail(`2-4 assumptions for ${label}`)
    if (!e.assumptions.some((a) => /VAT/.test(a))) t.fail(`VAT assumption for ${label}`)
    checked++
  }
  t.equal(checked, 4 * 10 * 4 * 3, 'all corpus inputs checked without failure')

  // The rounding really is to the nearest 100 (not floor/ceil): 10 m² consultation at 35..60 €/m²,
  // 1 room → rooms factor 0.8 + 0.2 × 35 / 10 = 1.5 → 15 m² effective → 525 → 500, 900 → 900.
  const small = est({ area_sqm: 10, rooms: 1, service_level: 'consultation' })
  t.same(small.breakdown.design_fee, { low: 500, high: 900 })
  // 12 m², 1 room → 0.8 × 12 + 7 = 16.6 m² effective → 35 × 16.6 = 581 → 600 (rounds up), 60 × 16.6 = 996 → 1000
  t.same(est({ area_sqm: 12, rooms: 1, service_level: 'consultation' }).breakdown.design_fee, { low: 600, high: 1000 })
})

t.test('rises with area (monotonic sweep)', async (t) => {
  for (const service_level of LEVELS) {
    for (const rooms of [undefined, 1, 4, 50]) {
      let prev: Estimate | undefined
      let steps = 0
      for (let area = 10; area <= 10000; area += area < 200 ? 5 : area < 2000 ? 50 : 500) {
        const input: EstimateInput = { area_sqm: area, service_level, style: cheapestStyle, city: cheapestCity }
        if (rooms !== undefined) input.rooms = rooms
        const e = est(input)
        if (prev !== undefined && !(e.low > prev.low && e.high > prev.high)) {
          t.fail(
            `${service_level} rooms=${rooms ?? 'default'}: area ${area} (${e.low}-${e.high}) not above previous (${prev.low}-${prev.high})`,
          )
        }
        prev = e
        steps++
      }
      t.ok(steps > 50, `${service_level}, rooms=${rooms ?? 'default'}: strictly rising over ${steps} areas`)
    }
  }
})

t.test('rises with rooms at fixed area (strictly, even after rounding)', async (t) => {
  // The cheapest corner of the model (cheapest style and city) is where a step is smallest,
  // so checking it for every level, at the smallest and largest areas, covers the rest.
  for (const service_level of LEVELS) {
    for (const area_sqm of [10, 140, 10000]) {
      const totals: number[] = []
      for (let rooms = 1; rooms <= 50; rooms++) {
        const e = est({ area_sqm, rooms, service_level, style: cheapestStyle, city: cheapestCity })
        totals.push(e.low)
        const prevLow = totals[totals.length - 2]
        if (prevLow !== undefined && !(e.low > prevLow)) t.fail(`${service_level} ${area_sqm} m²: rooms ${rooms} not above ${rooms - 1}`)
      }
      t.equal(totals.length, 50)
      t.ok(minOf(totals.slice(1).map((v, i) => v - (totals[i] ?? v))) >= 100, `${service_level} ${area_sqm} m²: each room adds >= 100 EUR`)
    }
  }
  // Rooms also move the factor in both directions around the expected density (one room per 35 m²).
  t.ok(est({ area_sqm: 140, rooms: 2 }).factors.rooms < 1, 'fewer rooms than expected: factor below 1')
  t.equal(est({ area_sqm: 140, rooms: 4 }).factors.rooms, 1, 'expected density: factor 1')
  t.ok(est({ area_sqm: 140, rooms: 8 }).factors.rooms > 1, 'more rooms than expected: factor above 1')
})

t.test('rises with service level', async (t) => {
  for (const area_sqm of [10, 85, 140, 2500, 10000]) {
    const totals = LEVELS.map((service_level) => est({ area_sqm, service_level }))
    for (let i = 1; i < totals.length; i++) {
      const a = totals[i - 1]
      const b = totals[i]
      t.ok(a !== undefined && b !== undefined && b.low > a.low && b.high > a.high, `${area_sqm} m²: ${LEVELS[i - 1]} < ${LEVELS[i]}`)
    }
    const [consultation, , fullService, turnkey] = totals
    t.same(consultation?.breakdown.furnishings, { low: 0, high: 0 }, 'consultation has no furnishings')
    t.ok((fullService?.breakdown.furnishings.low ?? 0) > 0, 'full-service includes furnishings')
    t.same(fullService?.breakdown.works, { low: 0, high: 0 }, 'full-service has no works')
    t.ok((turnkey?.breakdown.works.low ?? 0) > 0, 'turnkey includes works')
  }
})

t.test('style and city factors', async (t) => {
  const base = est({ area_sqm: 140, rooms: 4 })
  for (const style of STYLES) {
    const f = factorOf(model.style_factors.styles, style)
    const e = est({ area_sqm: 140, rooms: 4, style })
    t.equal(e.factors.style, f)
    t.equal(e.input.style, style)
    if (f > 1) t.ok(e.low > base.low && e.high > base.high, `${style} (×${f}) is dearer than no style`)
    else if (f < 1) t.ok(e.low < base.low && e.high < base.high, `${style} (×${f}) is cheaper than no style`)
  }
  t.ok(est({ area_sqm: 140, style: 'Art Deco Revival' }).high > est({ area_sqm: 140, style: 'Scandinavian Minimalism' }).high)

  for (const city of CITIES) {
    const f = factorOf(model.city_factors.cities, city)
    const e = est({ area_sqm: 140, rooms: 4, city })
    t.equal(e.factors.city, f)
    if (f > 1) t.ok(e.low > base.low, `${city} (×${f}) is dearer than no city`)
  }
  t.ok(est({ area_sqm: 140, city: 'Geneva' }).low > est({ area_sqm: 140, city: 'Lisbon' }).low, 'Geneva dearer than Lisbon')
  t.ok(est({ area_sqm: 140, city: 'London' }).low > est({ area_sqm: 140, city: 'Kyoto' }).low, 'London dearer than Kyoto')

  // Lookup is case-insensitive and trims; output uses the canonical name.
  const e = est({ area_sqm: 140, style: '  quiet LUXURY ', city: 'new york', service_level: ' Turnkey ' })
  t.same([e.input.style, e.input.city, e.input.service_level], ['Quiet Luxury', 'New York', 'turnkey'])
  t.same(e, est({ area_sqm: 140, style: 'Quiet Luxury', city: 'New York', service_level: 'turnkey' }))
  t.equal(est({ area_sqm: 140, service_level: 'Full Service' }).input.service_level, 'full-service', 'display name accepted')
})

t.test('determinism and purity', async (t) => {
  const input: EstimateInput = { area_sqm: 333.3, rooms: 9, service_level: 'design', style: 'Wabi-Sabi', city: 'Kyoto' }
  const frozen = Object.freeze({ ...input })
  const a = est(frozen)
  const b = est({ ...input })
  t.same(a, b)
  t.not(a, b, 'fresh objects each call')
  a.breakdown.design_fee.low = 1
  a.assumptions.push('mutated')
  t.same(est(input), b, 'mutating a result does not leak into the next')
  t.same(model, loadPricingModel(), 'model not mutated by estimating')
  t.same(input, { area_sqm: 333.3, rooms: 9, service_level: 'design', style: 'Wabi-Sabi', city: 'Kyoto' }, 'input not mutated')
})

t.test('nonsense input is refused with EstimateError naming the field', async (t) => {
  const bad: [string, unknown, string, RegExp][] = [
    ['missing area', {}, 'area_sqm', /between 10 and 10000/],
    ['NaN area', { area_sqm: Number.NaN }, 'area_sqm', /between 10 and 10000/],
    ['Infinity area', { area_sqm: Number.POSITIVE_INFINITY }, 'area_sqm', /between 10 and 10000/],
    ['negative area', { area_sqm: -50 }, 'area_sqm', /between 10 and 10000/],
    ['zero area', { area_sqm: 0 }, 'area_sqm', /between 10 and 10000/],
    ['area too small', { area_sqm: 9.99 }, 'area_sqm', /between 10 and 10000/],
    ['area too large', { area_sqm: 10000.5 }, 'area_sqm', /between 10 and 10000/],
    ['string area', { area_sqm: '120' }, 'area_sqm', /must be a number/],
    ['rooms 0', { area_sqm: 120, rooms: 0 }, 'rooms', /whole number between 1 and 50/],
    ['rooms 2.5', { area_sqm: 120, rooms: 2.5 }, 'rooms', /whole number between 1 and 50/],
    ['rooms 51', { area_sqm: 120, rooms: 51 }, 'rooms', /whole number between 1 and 50/],
    ['negative rooms', { area_sqm: 120, rooms: -3 }, 'rooms', /whole number between 1 and 50/],
    ['NaN rooms', { area_sqm: 120, rooms: Number.NaN }, 'rooms', /whole number between 1 and 50/],
    ['string rooms', { area_sqm: 120, rooms: '3' }, 'rooms', /whole number/],
    ['unknown level', { area_sqm: 120, service_level: 'deluxe' }, 'service_level', /consultation, design, full-service, turnkey/],
    ['numeric level', { area_sqm: 120, service_level: 3 }, 'service_level', /one of: consultation/],
    ['unknown style', { area_sqm: 120, style: 'Baroque' }, 'style', /unknown style "Baroque".*Japandi.*Art Deco Revival/],
    ['empty style', { area_sqm: 120, style: '   ' }, 'style', /one of: Japandi/],
    ['numeric style', { area_sqm: 120, style: 7 }, 'style', /one of: Japandi/],
    ['unknown city', { area_sqm: 120, city: 'Atlantis' }, 'city', /unknown city "Atlantis"; city must be one of: .*Geneva.*London.*Lisbon/],
    ['empty city', { area_sqm: 120, city: '' }, 'city', /one of: .*Kyoto/],
    ['input not an object', null, 'input', /area_sqm/],
  ]
  for (const [name, input, field, hint] of bad) {
    try {
      pricing.estimate(input as EstimateInput)
      t.fail(`${name}: accepted`)
    } catch (err) {
      t.ok(err instanceof EstimateError, `${name}: EstimateError`)
      if (err instanceof EstimateError) {
        t.equal(err.field, field, `${name}: field ${field}`)
        t.match(err.hint, hint, `${name}: useful hint`)
        t.match(err.message, field, `${name}: message names the field`)
        t.equal(err.name, 'EstimateError')
      }
    }
  }
  // An unknown city lists every known city.
  try {
    est({ area_sqm: 120, city: 'Atlantis' })
  } catch (err) {
    for (const city of CITIES) t.match((err as EstimateError).hint, city)
  }
  // Absent optional fields are fine (null is treated as absent, as JSON clients send it).
  t.equal(pricing.estimate({ area_sqm: 120, style: null, city: null } as unknown as EstimateInput).input.city, null)
  t.equal(est({ area_sqm: 10 }).input.rooms, 1, 'boundary area 10 accepted, default 1 room')
  t.equal(est({ area_sqm: 10000 }).input.rooms, 50, 'boundary area 10000 accepted, default rooms capped at 50')
  t.equal(est({ area_sqm: 120.75, rooms: 50 }).input.area_sqm, 120.75, 'non-integer area accepted')
})
