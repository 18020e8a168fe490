/**
 * Pricing estimator view — ui://{host}/pricing-estimator
 *
 * Renders `show_pricing_estimator` and lets the user tweak the configuration.
 * Every change is re-priced by the server through `estimate_price` (debounced);
 * the view never computes prices itself.
 */
import '../shared/base.css'
import './pricing.css'
import type { Estimate, PriceRange } from '../../features/pricing/estimate.ts'
import { append, clear, h, icon } from '../shared/dom.ts'
import {
  connectApp,
  createApp,
  currencyFormatter,
  isRecord,
  numberFormatter,
  resultText,
  thrownMessage,
  toolErrorMessage,
  tryHost,
} from '../shared/host.ts'
import { renderPending as showPending, renderProblem as showProblem } from '../shared/states.ts'

// ---------------------------------------------------------------------------
// Data contract
// ---------------------------------------------------------------------------

// The server's own types (type-only: nothing of the server is bundled into the view).
type Range = PriceRange
type Config = Estimate['input']
interface ServiceLevel {
  id: string
  name: string
  description: string
}
interface Options {
  service_levels: ServiceLevel[]
  styles: string[]
  cities: string[]
  default_service_level: string
  area_sqm: { min: number; max: number }
  rooms: { min: number; max: number }
}

const str = (v: unknown, d = ''): string => (typeof v === 'string' ? v : d)
const num = (v: unknown, d = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : d)
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])
const nullableStr = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : null)
const range = (v: unknown): Range => (isRecord(v) ? { low: num(v.low), high: num(v.high) } : { low: 0, high: 0 })

function parseConfig(v: unknown, fallback?: Partial<Config>): Config {
  const o = isRecord(v) ? v : {}
  return {
    area_sqm: num(o.area_sqm, fallback?.area_sqm ?? 0),
    rooms: num(o.rooms, fallback?.rooms ?? 1),
    service_level: str(o.service_level, fallback?.service_level ?? ''),
    style: o.style === undefined ? (fallback?.style ?? null) : nullableStr(o.style),
    city: o.city === undefined ? (fallback?.city ?? null) : nullableStr(o.city),
  }
}

function parseEstimate(v: unknown): Estimate | null {
  if (!isRecord(v) || typeof v.low !== 'number' || typeof v.high !== 'number') return null
  const b = isRecord(v.breakdown) ? v.breakdown : {}
  const f = isRecord(v.factors) ? v.factors : {}
  return {
    currency: 'EUR', // the only currency the studio quotes in (Estimate.currency)
    low: v.low,
    high: v.high,
    breakdown: { design_fee: range(b.design_fee), furnishings: range(b.furnishings), works: range(b.works) },
    input: parseConfig(v.input),
    factors: { style: num(f.style, 1), city: num(f.city, 1), rooms: num(f.rooms, 1) },
    assumptions: strs(v.assumptions),
  }
}

function parseOptions(v: unknown): Options | null {
  if (!isRecord(v)) return null
  const area = isRecord(v.area_sqm) ? v.area_sqm : {}
  const rooms = isRecord(v.rooms) ? v.rooms : {}
  return {
    service_levels: (Array.isArray(v.service_levels) ? v.service_levels : [])
      .filter(isRecord)
      .map((s) => ({ id: str(s.id), name: str(s.name, str(s.id)), description: str(s.description) }))
      .filter((s) => s.id),
    styles: strs(v.styles),
    cities: strs(v.cities),
    default_service_level: str(v.default_service_level),
    area_sqm: { min: num(area.min, 10), max: num(area.max, 2000) },
    rooms: { min: num(rooms.min, 1), max: num(rooms.max, 20) },
  }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

const root = document.getElementById('root') as HTMLElement
const app = createApp('studio-pricing-estimator')

let options: Options | null = null
let config: Config | null = null
let estimate: Estimate | null = null
let toolArgs: Partial<Config> = {}

let debounceTimer: ReturnType<typeof setTimeout> | undefined
let requestSeq = 0
let pending = false
let lastError: string | null = null

const DEBOUNCE_MS = 250

// ---------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------

function money(n: number, currency: string): string {
  return currencyFormatter(currency).format(n)
}

/** A breakdown line: "not included" when the service level leaves it out (like the server's text). */
function partRange(r: Range, currency: string): string {
  return r.high === 0 ? 'not included' : moneyRange(r, currency)
}

function moneyRange(r: Range, currency: string): string {
  return `${money(r.low, currency)} – ${money(r.high, currency)}`
}

function sqm(n: number): string {
  return `${numberFormatter().format(n)} m²`
}

function serviceName(id: string): string {
  return options?.service_levels.find((s) => s.id === id)?.name ?? id
}

function serviceLabel(id: string): string {
  const name = serviceName(id)
  return /service/i.test(name) ? name : `${name} service`
}

function describeConfig(c: Config): string {
  return [
    sqm(c.area_sqm),
    `${c.rooms} ${c.rooms === 1 ? 'room' : 'rooms'}`,
    serviceLabel(c.service_level),
    c.style ? `${c.style} style` : null,
    c.city ? `in ${c.city}` : null,
  ]
    .filter(Boolean)
    .join(', ')
}

function factor(n: number): string {
  return `×${n.toFixed(2)}`
}

// ---------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------

function renderPending(message: string): void {
  showPending(root, 'Pricing estimator', message, ['width: 46%; height: 34px', 'width: 72%', 'width: 64%'])
}

function renderProblem(message: string): void {
  showProblem(root, 'Pricing estimator', message)
}

function renderAll(): void {
  if (!options || !config) return
  root.setAttribute('aria-busy', 'false')
  clear(root)
  append(root, [
    h(
      'header',
      { class: 'est-header' },
      h('p', { class: 'eyebrow' }, 'Pricing estimator'),
      h('h1', { class: 'display est-title' }, 'Estimate your project'),
      h('p', { class: 'muted' }, 'Adjust the brief below — the studio recalculates an indicative range as you go.'),
    ),
    h('div', { class: 'est-grid' }, renderControls(options, config), h('div', { class: 'est-result', id: 'result' })),
    h('div', { id: 'assumptions' }),
  ])
  renderResult()
}

// ---------------------------------------------------------------------------
// Controls
// ---------------------------------------------------------------------------

function renderControls(o: Options, c: Config): HTMLElement {
  const scale = areaScale(o.area_sqm)
  const slider = h('input', {
    type: 'range',
    class: 'range',
    id: 'area-range',
    min: 0,
    max: SLIDER_STEPS,
    step: 1,
    value: scale.toSlider(c.area_sqm),
    'aria-label': 'Area in square metres',
    'aria-valuetext': sqm(c.area_sqm),
  })
  const setSlider = (area: number) => {
    slider.value = String(scale.toSlider(area))
    slider.setAttribute('aria-valuetext', sqm(area))
  }
  const areaNum = h('input', {
    type: 'number',
    class: 'input area-number',
    id: 'area-number',
    min: o.area_sqm.min,
    max: o.area_sqm.max,
    step: 1,
    inputmode: 'numeric',
    value: c.area_sqm,
    'aria-describedby': 'area-hint',
  })
  const areaHint = h('p', { class: 'field-hint', id: 'area-hint' }, `${sqm(o.area_sqm.min)} – ${sqm(o.area_sqm.max)}`)
  paintSlider(slider)

  slider.addEventListener('input', () => {
    const area = scale.toArea(Number(slider.value))
    areaNum.value = String(area)
    slider.setAttribute('aria-valuetext', sqm(area))
    areaNum.removeAttribute('aria-invalid')
    areaHint.classList.remove('is-error')
    paintSlider(slider)
    update({ area_sqm: area })
  })
  areaNum.addEventListener('input', () => {
    const v = Number(areaNum.value)
    const ok = areaNum.value !== '' && Number.isFinite(v) && v >= o.area_sqm.min && v <= o.area_sqm.max
    if (ok) areaNum.removeAttribute('aria-invalid')
    else areaNum.setAttribute('aria-invalid', 'true')
    areaHint.classList.toggle('is-error', !ok)
    if (!ok) return
    setSlider(v)
    paintSlider(slider)
    update({ area_sqm: Math.round(v) })
  })
  areaNum.addEventListener('change', () => {
    // Clamp on commit so the field never stays in an invalid state.
    const raw = Number(areaNum.value)
    const v = Math.round(
      Math.min(
        o.area_sqm.max,
        Math.max(o.area_sqm.min, Number.isFinite(raw) && areaNum.value !== '' ? raw : (config?.area_sqm ?? o.area_sqm.min)),
      ),
    )
    areaNum.value = String(v)
    setSlider(v)
    areaNum.removeAttribute('aria-invalid')
    areaHint.classList.remove('is-error')
    paintSlider(slider)
    if (v !== config?.area_sqm) update({ area_sqm: v })
  })

  // Rooms stepper
  const roomsOut = h('output', { class: 'stepper-value', id: 'rooms-value', 'aria-live': 'polite' }, String(c.rooms))
  const minus = h(
    'button',
    { type: 'button', class: 'stepper-btn', 'aria-label': 'Fewer rooms', 'aria-controls': 'rooms-value' },
    icon('minus'),
  )
  const plus = h(
    'button',
    { type: 'button', class: 'stepper-btn', 'aria-label': 'More rooms', 'aria-controls': 'rooms-value' },
    icon('plus'),
  )
  const syncRooms = (n: number) => {
    roomsOut.textContent = String(n)
    minus.disabled = n <= o.rooms.min
    plus.disabled = n >= o.rooms.max
  }
  syncRooms(c.rooms)
  minus.addEventListener('click', () => {
    const n = Math.max(o.rooms.min, (config?.rooms ?? o.rooms.min) - 1)
    syncRooms(n)
    update({ rooms: n })
  })
  plus.addEventListener('click', () => {
    const n = Math.min(o.rooms.max, (config?.rooms ?? o.rooms.min) + 1)
    syncRooms(n)
    update({ rooms: n })
  })

  // Service level segmented control (native radios for keyboard + a11y)
  const levelDesc = h('p', { class: 'segment-desc', id: 'service-desc', 'aria-live': 'polite' })
  const segments = h(
    'div',
    { class: 'segmented' },
    o.service_levels.map((s) => {
      const input = h('input', {
        type: 'radio',
        name: 'service_level',
        value: s.id,
        class: 'segment-input',
        id: `service-${s.id}`,
        checked: s.id === c.service_level,
        'aria-describedby': 'service-desc',
      })
      input.addEventListener('change', () => {
        if (!input.checked) return
        levelDesc.textContent = s.description
        update({ service_level: s.id })
      })
      return h(
        'label',
        { class: 'segment', for: `service-${s.id}`, title: s.description },
        input,
        h('span', { class: 'segment-name' }, s.name),
      )
    }),
  )
  levelDesc.textContent = o.service_levels.find((s) => s.id === c.service_level)?.description ?? ''

  const styleSel = select('style', 'No preference', o.styles, c.style)
  styleSel.addEventListener('change', () => update({ style: styleSel.value || null }))
  const citySel = select('city', 'Not decided yet', o.cities, c.city)
  citySel.addEventListener('change', () => update({ city: citySel.value || null }))

  return h(
    'form',
    { class: 'est-controls', 'aria-label': 'Project configuration', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h(
        'div',
        { class: 'field-top' },
        h('label', { class: 'field-label', for: 'area-number' }, 'Area'),
        h('span', { class: 'area-input' }, areaNum, h('span', { class: 'unit', 'aria-hidden': 'true' }, 'm²')),
      ),
      slider,
      areaHint,
    ),
    h(
      'div',
      { class: 'field field-inline' },
      h('span', { class: 'field-label', id: 'rooms-label' }, 'Rooms'),
      h('div', { class: 'stepper', role: 'group', 'aria-labelledby': 'rooms-label' }, minus, roomsOut, plus),
    ),
    h('fieldset', { class: 'field segment-field' }, h('legend', { class: 'field-label' }, 'Service level'), segments, levelDesc),
    h(
      'div',
      { class: 'field-row' },
      h('div', { class: 'field' }, h('label', { class: 'field-label', for: 'style' }, 'Style'), styleSel),
      h('div', { class: 'field' }, h('label', { class: 'field-label', for: 'city' }, 'City'), citySel),
    ),
  )
}

function select(id: string, emptyLabel: string, values: string[], current: string | null): HTMLSelectElement {
  const list = current && !values.some((v) => v.toLowerCase() === current.toLowerCase()) ? [...values, current] : values
  const el = h(
    'select',
    { class: 'select', id, name: id },
    h('option', { value: '' }, emptyLabel),
    list.map((v) => h('option', { value: v, selected: !!current && v.toLowerCase() === current.toLowerCase() }, v)),
  )
  return el
}

const SLIDER_STEPS = 1000

/**
 * Slider position ↔ area. A range spanning orders of magnitude (10 – 10,000 m²) is logarithmic,
 * so the common flats and houses get most of the track; the slider rounds to sensible steps.
 */
function areaScale(limits: { min: number; max: number }): { toSlider(area: number): number; toArea(pos: number): number } {
  const min = Math.max(1, limits.min)
  const max = Math.max(min + 1, limits.max)
  const clamp = (a: number) => Math.min(max, Math.max(min, a))
  const log = max / min > 50
  const nice = (a: number) => {
    const step = a >= 2000 ? 50 : a >= 500 ? 10 : a >= 100 ? 5 : 1
    return clamp(Math.round(a / step) * step)
  }
  return {
    toSlider: (area) => {
      const a = clamp(area)
      const t = log ? Math.log(a / min) / Math.log(max / min) : (a - min) / (max - min)
      return Math.round(t * SLIDER_STEPS)
    },
    toArea: (pos) => {
      const t = Math.min(1, Math.max(0, pos / SLIDER_STEPS))
      return nice(log ? min * (max / min) ** t : min + t * (max - min))
    },
  }
}

function paintSlider(slider: HTMLInputElement): void {
  const min = Number(slider.min)
  const max = Number(slider.max)
  const pct = max > min ? ((Number(slider.value) - min) / (max - min)) * 100 : 0
  slider.style.setProperty('--fill', `${pct}%`)
}

// ---------------------------------------------------------------------------
// Re-pricing (debounced, latest-wins)
// ---------------------------------------------------------------------------

function update(patch: Partial<Config>): void {
  if (!config) return
  config = { ...config, ...patch }
  markUpdating(true)
  clearTimeout(debounceTimer)
  debounceTimer = setTimeout(() => {
    debounceTimer = undefined
    void recompute()
  }, DEBOUNCE_MS)
}

function toolArguments(c: Config): Record<string, unknown> {
  const args: Record<string, unknown> = { area_sqm: c.area_sqm, rooms: c.rooms, service_level: c.service_level }
  if (c.style) args.style = c.style
  if (c.city) args.city = c.city
  return args
}

async function recompute(): Promise<void> {
  if (!config) return
  const seq = ++requestSeq
  const requested = { ...config }
  let next: Estimate | null = null
  let error: string | null = null
  try {
    const result = await app.callServerTool({ name: 'estimate_price', arguments: toolArguments(requested) })
    if (result.isError) error = toolErrorMessage(result, 'The studio could not price this configuration.')
    else {
      next = parseEstimate(result.structuredContent)
      if (!next) error = resultText(result) || 'The estimate came back in an unexpected format.'
    }
  } catch (err) {
    error = thrownMessage(err, 'The estimate could not be updated.')
  }
  // A newer change is pending or in flight: this response is stale.
  if (seq !== requestSeq || debounceTimer !== undefined) return

  lastError = error
  if (next) estimate = next
  markUpdating(false)
  renderResult()
  if (next) void tellModel(next)
}

function markUpdating(on: boolean): void {
  pending = on
  const result = root.querySelector<HTMLElement>('#result')
  if (!result) return
  result.classList.toggle('is-updating', on)
  result.setAttribute('aria-busy', String(on))
  const status = result.querySelector<HTMLElement>('.est-status')
  if (status) status.textContent = on ? 'Updating…' : ''
}

async function tellModel(e: Estimate): Promise<void> {
  const c = e.input
  const text =
    `Pricing estimator — the user is exploring: ${describeConfig(c)}. ` +
    `Indicative range ${moneyRange(e, e.currency)} (${e.currency}); ` +
    `design fee ${partRange(e.breakdown.design_fee, e.currency)}, furnishings ${partRange(e.breakdown.furnishings, e.currency)}, works ${partRange(e.breakdown.works, e.currency)}.`
  await tryHost(() =>
    app.updateModelContext({
      content: [{ type: 'text', text }],
      structuredContent: {
        view: 'pricing-estimator',
        configuration: { ...c },
        estimate: { currency: e.currency, low: e.low, high: e.high, breakdown: e.breakdown },
      },
    }),
  )
}

// ---------------------------------------------------------------------------
// Result panel
// ---------------------------------------------------------------------------

const BREAKDOWN: { key: keyof Estimate['breakdown']; label: string }[] = [
  { key: 'design_fee', label: 'Design fee' },
  { key: 'furnishings', label: 'Furnishings' },
  { key: 'works', label: 'Works' },
]

function renderResult(): void {
  const panel = root.querySelector<HTMLElement>('#result')
  const assumptions = root.querySelector<HTMLElement>('#assumptions')
  if (!panel || !assumptions) return
  clear(panel)
  clear(assumptions)
  const e = estimate
  if (!e) {
    append(panel, [h('p', { class: 'muted' }, 'No estimate yet.')])
    return
  }
  const cur = e.currency
  const scale = Math.max(1, ...BREAKDOWN.map((b) => e.breakdown[b.key].high))

  const discuss = h('button', { type: 'button', class: 'btn btn-primary', id: 'discuss' }, icon('chat'), 'Discuss this estimate')
  discuss.disabled = lastError !== null
  discuss.addEventListener('click', () => void discussEstimate(discuss))

  append(panel, [
    h(
      'div',
      { class: 'est-total-block' },
      h(
        'div',
        { class: 'est-total-head' },
        h('p', { class: 'eyebrow', id: 'total-label' }, 'Indicative investment'),
        h('span', { class: 'est-status xsmall', role: 'status' }),
      ),
      h(
        'p',
        { class: 'est-total display', id: 'total', 'aria-labelledby': 'total-label total', 'aria-live': 'polite', 'aria-atomic': 'true' },
        moneyRange(e, cur),
      ),
      h('p', { class: 'est-summary small muted' }, describeConfig(e.input)),
    ),
    lastError
      ? h(
          'div',
          { class: 'notice notice-error', role: 'alert', id: 'estimate-error' },
          icon('alert'),
          h(
            'span',
            {},
            h('span', { class: 'error-message' }, lastError),
            h('span', { class: 'error-hint' }, ' The figures below are the last valid estimate.'),
          ),
        )
      : null,
    h(
      'div',
      { class: 'breakdown', role: 'list', 'aria-label': 'Breakdown' },
      BREAKDOWN.map(({ key, label }) => {
        const r = e.breakdown[key]
        const low = h('span', { class: 'bar-low' })
        const spread = h('span', { class: 'bar-spread' })
        low.style.width = `${(r.low / scale) * 100}%`
        spread.style.left = `${(r.low / scale) * 100}%`
        spread.style.width = `${(Math.max(0, r.high - r.low) / scale) * 100}%`
        return h(
          'div',
          { class: `bar-row bar-${key}`, role: 'listitem' },
          h(
            'div',
            { class: 'bar-text' },
            h('span', { class: 'bar-label' }, label),
            h('span', { class: `bar-value${r.high === 0 ? ' is-none' : ''}` }, r.high === 0 ? 'Not included' : moneyRange(r, cur)),
          ),
          h('div', { class: 'bar-track', 'aria-hidden': 'true' }, low, spread),
        )
      }),
    ),
    h(
      'ul',
      { class: 'factors', 'aria-label': 'Adjustment factors' },
      h('li', {}, 'Style ', h('span', { class: 'factor' }, factor(e.factors.style))),
      h('li', {}, 'City ', h('span', { class: 'factor' }, factor(e.factors.city))),
      h('li', {}, 'Rooms ', h('span', { class: 'factor' }, factor(e.factors.rooms))),
    ),
    h('div', { class: 'est-actions' }, discuss, h('span', { class: 'xsmall muted', id: 'discuss-status', role: 'status' })),
  ])
  if (lastError) panel.classList.add('has-error')
  else panel.classList.remove('has-error')

  if (e.assumptions.length) {
    append(assumptions, [
      h(
        'section',
        { class: 'assumptions', 'aria-labelledby': 'assumptions-title' },
        h('h2', { class: 'assumptions-title', id: 'assumptions-title' }, 'Assumptions'),
        h(
          'ul',
          {},
          e.assumptions.map((a) => h('li', {}, a)),
        ),
      ),
    ])
  }
  markUpdating(pending)
}

async function discussEstimate(button: HTMLButtonElement): Promise<void> {
  const e = estimate
  if (!e) return
  const cur = e.currency
  const text =
    `I'd like to discuss this estimate: ${describeConfig(e.input)} — ${moneyRange(e, cur)} ` +
    `(design fee ${partRange(e.breakdown.design_fee, cur)}, furnishings ${partRange(e.breakdown.furnishings, cur)}, works ${partRange(e.breakdown.works, cur)}). ` +
    'What drives the range, and what would the next steps be?'
  button.disabled = true
  const res = await tryHost(() => app.sendMessage({ role: 'user', content: [{ type: 'text', text }] }))
  button.disabled = lastError !== null
  const status = root.querySelector<HTMLElement>('#discuss-status')
  if (status) status.textContent = res && !res.isError ? 'Sent to the conversation.' : 'Could not send — please ask in the chat.'
}

// ---------------------------------------------------------------------------
// Host wiring
// ---------------------------------------------------------------------------

app.addEventListener('toolinput', (params) => {
  const a = params.arguments ?? {}
  toolArgs = {}
  if (typeof a.area_sqm === 'number') toolArgs.area_sqm = a.area_sqm
  if (typeof a.rooms === 'number') toolArgs.rooms = a.rooms
  if (typeof a.service_level === 'string') toolArgs.service_level = a.service_level
  if (typeof a.style === 'string') toolArgs.style = a.style
  if (typeof a.city === 'string') toolArgs.city = a.city
  if (options) return
  const bits = [
    toolArgs.area_sqm ? sqm(toolArgs.area_sqm) : null,
    toolArgs.rooms ? `${toolArgs.rooms} rooms` : null,
    toolArgs.style ?? null,
    toolArgs.city ?? null,
  ].filter(Boolean)
  renderPending(bits.length ? `Preparing an estimate for ${bits.join(' · ')}…` : 'Preparing your estimate…')
})

app.addEventListener('toolresult', (result) => {
  if (result.isError) {
    renderProblem(toolErrorMessage(result, 'The estimator could not be loaded.'))
    return
  }
  const sc = result.structuredContent
  const o = isRecord(sc) ? parseOptions(sc.options) : null
  const e = isRecord(sc) ? parseEstimate(sc.estimate) : null
  if (!isRecord(sc) || !o || !e) {
    renderProblem(resultText(result) || 'The estimator could not be displayed.')
    return
  }
  options = o
  estimate = e
  config = parseConfig(sc.input, { ...e.input, ...toolArgs })
  if (!config.service_level) config.service_level = o.default_service_level || o.service_levels[0]?.id || ''
  lastError = null
  renderAll()
})

app.addEventListener('toolcancelled', (params) => {
  if (options) return
  renderProblem(params.reason ? `The estimate request was cancelled (${params.reason}).` : 'The estimate request was cancelled.')
})

connectApp(app).catch((err: unknown) => {
  renderProblem(thrownMessage(err, 'This view could not connect to its host.'))
})
