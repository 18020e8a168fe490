/**
 * Playbook view — ui://{host}/playbook
 *
 * Renders the result of `show_playbook({style?, location?})`: the studio's
 * process as a timeline, its signature styles with palettes and project cards,
 * and a consultation form that calls `request_consultation` through the host.
 */
import '../shared/base.css'
import './playbook.css'
import type { Phase, PlaybookProject, PlaybookView } from '../../features/playbook/view-types.ts'
import { append, clear, h, icon } from '../shared/dom.ts'
import {
  type CallToolResult,
  connectApp,
  createApp,
  isRecord,
  numberFormatter,
  resultText,
  thrownMessage,
  toolErrorMessage,
  tryHost,
} from '../shared/host.ts'
import { renderPending as showPending, renderProblem as showProblem } from '../shared/states.ts'

// ---------------------------------------------------------------------------
// Data contract (structuredContent of show_playbook)
// ---------------------------------------------------------------------------

// The server's own types (type-only: nothing of the server is bundled into the view).
type Playbook = PlaybookView
type Style = PlaybookView['styles'][number]
type Project = PlaybookProject

const str = (v: unknown, d = ''): string => (typeof v === 'string' ? v : d)
const num = (v: unknown, d = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : d)
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const nullableStr = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : null)

function parsePlaybook(sc: unknown): Playbook | null {
  if (!isRecord(sc) || !isRecord(sc.studio)) return null
  const filter = isRecord(sc.filter) ? sc.filter : {}
  return {
    studio: { name: str(sc.studio.name, 'The Studio'), tagline: str(sc.studio.tagline) },
    phases: arr(sc.phases)
      .filter(isRecord)
      .map((p) => {
        const d = isRecord(p.duration_weeks) ? p.duration_weeks : {}
        return {
          id: str(p.id),
          name: str(p.name),
          summary: str(p.summary),
          deliverables: arr(p.deliverables).filter((x): x is string => typeof x === 'string'),
          duration_weeks: { min: num(d.min), max: num(d.max, num(d.min)) },
        }
      }),
    styles: arr(sc.styles)
      .filter(isRecord)
      .map((s) => ({
        name: str(s.name),
        description: str(s.description),
        palette: arr(s.palette).filter((x): x is string => typeof x === 'string'),
        projects: arr(s.projects)
          .filter(isRecord)
          .map((p) => ({
            id: str(p.id),
            title: str(p.title),
            designer: str(p.designer),
            city: str(p.city),
            country: str(p.country),
            year: num(p.year),
            area_sqm: num(p.area_sqm),
            image: isRecord(p.image) && typeof p.image.url === 'string' ? { url: p.image.url, alt: str(p.image.alt) } : null,
            page_url: str(p.page_url),
          })),
      })),
    filter: { style: nullableStr(filter.style), location: nullableStr(filter.location) },
  }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

const root = document.getElementById('root') as HTMLElement
const app = createApp('studio-playbook')

let data: Playbook | null = null
let selectedStyle: string | null = null
let toolInput: { style: string | null; location: string | null } = { style: null, location: null }

// ---------------------------------------------------------------------------
// Formatting helpers
// ---------------------------------------------------------------------------

function weeks(d: { min: number; max: number }): string {
  const { min, max } = d
  if (!min && !max) return ''
  if (min === max || !max) return `${min} ${min === 1 ? 'week' : 'weeks'}`
  return `${min}–${max} weeks`
}

function totalWeeks(phases: Phase[]): string {
  const min = phases.reduce((s, p) => s + p.duration_weeks.min, 0)
  const max = phases.reduce((s, p) => s + p.duration_weeks.max, 0)
  return min || max ? weeks({ min, max }) : ''
}

function pad2(n: number): string {
  return String(n).padStart(2, '0')
}

function isCssColor(c: string): boolean {
  return typeof CSS !== 'undefined' && CSS.supports('color', c)
}

/** Like the server's matching: case, accents, spaces and punctuation do not matter. */
function styleKey(s: string): string {
  return s
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '')
}

function sameStyle(a: string | null, b: string | null): boolean {
  return !!a && !!b && styleKey(a) === styleKey(b)
}

function httpUrl(u: string): string | null {
  try {
    const url = new URL(u)
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

function renderPending(message: string): void {
  showPending(root, 'Studio playbook', message, ['width: 72%', 'width: 64%', 'width: 48%'])
}

function renderProblem(message: string): void {
  showProblem(root, 'Studio playbook', message)
}

function render(pb: Playbook): void {
  root.setAttribute('aria-busy', 'false')
  clear(root)
  append(root, [renderHero(pb), renderProcess(pb.phases), renderStyles(pb), renderConsultation(pb)])
  applySelection()
}

function renderHero(pb: Playbook): HTMLElement {
  const curated: (string | Node)[] = []
  if (pb.filter.style || pb.filter.location) {
    curated.push('Curated for ')
    if (pb.filter.style) curated.push(h('strong', {}, pb.filter.style))
    if (pb.filter.style && pb.filter.location) curated.push(' · ')
    if (pb.filter.location) curated.push(h('strong', {}, pb.filter.location))
  }
  return h(
    'header',
    { class: 'hero' },
    h('p', { class: 'eyebrow' }, 'Studio playbook'),
    h('h1', { class: 'display hero-title' }, pb.studio.name),
    pb.studio.tagline ? h('p', { class: 'hero-tagline' }, pb.studio.tagline) : null,
    curated.length ? h('p', { class: 'hero-curated small' }, ...curated) : null,
  )
}

function renderProcess(phases: Phase[]): HTMLElement {
  const total = totalWeeks(phases)
  return h(
    'section',
    { class: 'section', 'aria-labelledby': 'process-title' },
    h(
      'div',
      { class: 'section-head' },
      h('h2', { id: 'process-title' }, 'How we work'),
      h(
        'p',
        { class: 'muted small' },
        `${phases.length} ${phases.length === 1 ? 'phase' : 'phases'}${total ? ` · typically ${total} end to end` : ''}`,
      ),
    ),
    h(
      'ol',
      { class: 'timeline' },
      phases.map((p, i) =>
        h(
          'li',
          { class: 'phase', 'data-phase': p.id },
          h('span', { class: 'phase-marker', 'aria-hidden': 'true' }, pad2(i + 1)),
          h(
            'div',
            { class: 'phase-body' },
            h(
              'div',
              { class: 'phase-head' },
              h('h3', { class: 'phase-name' }, p.name),
              weeks(p.duration_weeks)
                ? h('span', { class: 'duration' }, h('span', { class: 'sr-only' }, 'Duration: '), weeks(p.duration_weeks))
                : null,
            ),
            p.summary ? h('p', { class: 'phase-summary muted' }, p.summary) : null,
            p.deliverables.length
              ? h(
                  'div',
                  { class: 'deliverables' },
                  h('p', { class: 'deliverables-label', id: `deliv-${i}` }, 'You receive'),
                  h(
                    'ul',
                    { 'aria-labelledby': `deliv-${i}` },
                    p.deliverables.map((d) => h('li', {}, d)),
                  ),
                )
              : null,
          ),
        ),
      ),
    ),
  )
}

function renderStyles(pb: Playbook): HTMLElement {
  const showChips = pb.styles.length > 1
  return h(
    'section',
    { class: 'section', 'aria-labelledby': 'styles-title' },
    h(
      'div',
      { class: 'section-head' },
      h('h2', { id: 'styles-title' }, pb.styles.length === 1 ? 'Signature style' : 'Signature styles'),
      h('p', { class: 'muted small', id: 'styles-status', 'aria-live': 'polite' }),
    ),
    showChips
      ? h(
          'div',
          { class: 'chips style-chips', role: 'group', 'aria-label': 'Filter by style' },
          h('button', { type: 'button', class: 'chip', 'data-chip': '', 'aria-pressed': 'false' }, 'All styles'),
          pb.styles.map((s) =>
            h(
              'button',
              { type: 'button', class: 'chip', 'data-chip': s.name, 'aria-pressed': 'false' },
              h(
                'span',
                { class: 'chip-dots', 'aria-hidden': 'true' },
                s.palette
                  .slice(0, 3)
                  .filter(isCssColor)
                  .map((c) => dot(c)),
              ),
              s.name,
            ),
          ),
        )
      : null,
    pb.styles.length
      ? h(
          'div',
          { class: 'styles' },
          pb.styles.map((s, i) => renderStyle(s, i, pb.filter.location)),
        )
      : h('p', { class: 'muted empty' }, 'No styles match this request yet — the studio can propose one in a consultation.'),
  )
}

function dot(color: string): HTMLElement {
  const el = h('span', { class: 'chip-dot' })
  el.style.background = color
  return el
}

function renderStyle(s: Style, i: number, location: string | null): HTMLElement {
  const titleId = `style-${i}`
  return h(
    'article',
    { class: 'style', 'data-style': s.name, 'aria-labelledby': titleId },
    h(
      'div',
      { class: 'style-head' },
      h(
        'div',
        { class: 'style-intro' },
        h('h3', { class: 'display style-name', id: titleId }, s.name),
        s.description ? h('p', { class: 'muted' }, s.description) : null,
      ),
      s.palette.length
        ? h(
            'ul',
            { class: 'palette', 'aria-label': `${s.name} palette` },
            s.palette.map((c) => {
              const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' })
              if (isCssColor(c)) sw.style.background = c
              return h('li', { class: 'palette-item', title: c }, sw, h('span', { class: 'swatch-label' }, c))
            }),
          )
        : null,
    ),
    s.projects.length
      ? h(
          'ul',
          { class: 'projects', 'aria-label': `${s.name} projects` },
          s.projects.map((p) => h('li', {}, renderProject(p, s))),
        )
      : h(
          'p',
          { class: 'muted small empty-projects' },
          location
            ? `No published ${s.name} projects in ${location} yet — the studio can share more in a consultation.`
            : 'Projects in this style are shared on request.',
        ),
  )
}

function placeholder(style: Style, label: string): HTMLElement {
  const colors = style.palette.filter(isCssColor)
  const el = h('div', { class: 'project-placeholder', 'aria-hidden': 'true' }, h('span', {}, label.slice(0, 1).toUpperCase()))
  if (colors.length >= 2) el.style.background = `linear-gradient(135deg, ${colors[0]} 0%, ${colors[colors.length - 1]} 100%)`
  else if (colors.length === 1) el.style.background = colors[0] as string
  return el
}

function renderProject(p: Project, style: Style): HTMLElement {
  const url = httpUrl(p.page_url)
  const media = h('div', { class: 'project-media' })
  const imgUrl = p.image ? (httpUrl(p.image.url) ?? (p.image.url.startsWith('data:image/') ? p.image.url : null)) : null
  if (p.image && imgUrl) {
    const img = h('img', {
      src: imgUrl,
      alt: p.image.alt || p.title,
      loading: 'lazy',
      decoding: 'async',
      width: 400,
      height: 300,
    })
    img.addEventListener('error', () => img.replaceWith(placeholder(style, p.title)), { once: true })
    media.appendChild(img)
  } else {
    media.appendChild(placeholder(style, p.title))
  }

  const place = [p.city, p.country].filter(Boolean).join(', ')
  const meta = [place, p.year ? String(p.year) : ''].filter(Boolean).join(' · ')
  const meta2 = [p.designer, p.area_sqm ? `${numberFormatter().format(p.area_sqm)} m²` : ''].filter(Boolean).join(' · ')

  const body = h(
    'div',
    { class: 'project-body' },
    h('h4', { class: 'project-title' }, p.title),
    meta ? h('p', { class: 'project-meta' }, meta) : null,
    meta2 ? h('p', { class: 'project-meta2' }, meta2) : null,
    url ? h('span', { class: 'project-cta' }, 'View project', icon('external')) : null,
  )

  if (!url) return h('div', { class: 'project', 'data-project': p.id }, media, body)

  const link = h(
    'a',
    { class: 'project', href: url, 'data-project': p.id, 'aria-label': `${p.title}${meta ? `, ${meta}` : ''} — view project` },
    media,
    body,
  )
  link.addEventListener('click', (ev) => {
    ev.preventDefault()
    void openProject(url, link)
  })
  return link
}

async function openProject(url: string, link: HTMLElement): Promise<void> {
  const res = await tryHost(() => app.openLink({ url }))
  if (!res || res.isError) {
    link.classList.add('link-denied')
    const cta = link.querySelector('.project-cta')
    if (cta) cta.textContent = 'Link unavailable here'
    setTimeout(() => link.classList.remove('link-denied'), 2400)
  }
}

// ---------------------------------------------------------------------------
// Style selection → filter + tell the model
// ---------------------------------------------------------------------------

function applySelection(): void {
  if (!data) return
  const chips = root.querySelectorAll<HTMLButtonElement>('[data-chip]')
  chips.forEach((chip) => {
    const name = chip.dataset.chip || null
    chip.setAttribute('aria-pressed', String(name === null ? selectedStyle === null : sameStyle(name, selectedStyle)))
  })
  let visible = 0
  root.querySelectorAll<HTMLElement>('article.style').forEach((article) => {
    const show = selectedStyle === null || sameStyle(article.dataset.style ?? null, selectedStyle)
    article.hidden = !show
    if (show) visible++
  })
  const status = root.querySelector('#styles-status')
  if (status) {
    status.textContent =
      selectedStyle === null
        ? `${data.styles.length} ${data.styles.length === 1 ? 'style' : 'styles'}`
        : `Showing ${visible ? selectedStyle : 'no style'} · ${data.styles.length} in total`
  }
  updateNotePlaceholder()
}

root.addEventListener('click', (ev) => {
  const chip = (ev.target as Element | null)?.closest<HTMLButtonElement>('[data-chip]')
  if (!chip || !data) return
  const name = chip.dataset.chip || null
  const next = name === null || sameStyle(name, selectedStyle) ? null : name
  if (next === selectedStyle) return
  selectedStyle = next
  applySelection()
  void tellModelAboutStyle()
})

async function tellModelAboutStyle(): Promise<void> {
  if (!data) return
  const style = data.styles.find((s) => sameStyle(s.name, selectedStyle))
  const location = data.filter.location
  let text: string
  if (!style) {
    text = `In the ${data.studio.name} playbook view, the user cleared the style filter and is browsing all ${data.styles.length} signature styles (${data.styles.map((s) => s.name).join(', ')}).`
  } else {
    const projects = style.projects.map((p) => `${p.title} (${[p.city, p.year || ''].filter(Boolean).join(', ')})`).join('; ')
    text =
      `In the ${data.studio.name} playbook view, the user selected the "${style.name}" style` +
      (location ? ` (location of interest: ${location})` : '') +
      `. ${style.description}` +
      (style.palette.length ? ` Palette: ${style.palette.join(', ')}.` : '') +
      (projects ? ` Signature projects shown: ${projects}.` : '')
  }
  await tryHost(() =>
    app.updateModelContext({
      content: [{ type: 'text', text }],
      structuredContent: {
        view: 'playbook',
        selected_style: style ? style.name : null,
        location: location,
        project_ids: style ? style.projects.map((p) => p.id) : [],
      },
    }),
  )
}

// ---------------------------------------------------------------------------
// Consultation form → request_consultation
// ---------------------------------------------------------------------------

type FieldName = 'name' | 'email' | 'phone' | 'note' | 'consent'
type TextField = Exclude<FieldName, 'consent'>

function field(name: FieldName, label: string, control: HTMLInputElement | HTMLTextAreaElement, optional = false): HTMLElement {
  const id = `f-${name}`
  const errId = `${id}-error`
  control.id = id
  control.name = name
  control.setAttribute('aria-describedby', errId)
  if (!optional) control.setAttribute('aria-required', 'true')
  return h(
    'div',
    { class: `field field-${name}` },
    h('label', { class: 'field-label', for: id }, label, optional ? h('span', { class: 'optional' }, ' (optional)') : null),
    control,
    h('p', { class: 'field-error', id: errId, 'aria-live': 'polite' }),
  )
}

function renderConsultation(pb: Playbook): HTMLElement {
  const name = h('input', { class: 'input', type: 'text', autocomplete: 'name', maxlength: 120 })
  const email = h('input', { class: 'input', type: 'email', autocomplete: 'email', inputmode: 'email', maxlength: 200 })
  const phone = h('input', { class: 'input', type: 'tel', autocomplete: 'tel', inputmode: 'tel', maxlength: 40 })
  const note = h('textarea', { class: 'textarea', rows: 3, maxlength: 2000 })
  // The tool stores nothing without the person's explicit consent: the form does not send without it.
  const consent = h('input', {
    class: 'checkbox',
    type: 'checkbox',
    id: 'f-consent',
    name: 'consent',
    'aria-describedby': 'f-consent-error',
  })
  consent.setAttribute('aria-required', 'true')

  const submit = h('button', { type: 'button', class: 'btn btn-primary', id: 'consult-submit' }, 'Request consultation', icon('arrow'))
  const formError = h('div', { class: 'notice notice-error', role: 'alert', id: 'consult-error', hidden: true })

  // A <form> for semantics and autofill. Submission is handled in script
  // (button type="button" + Enter key) so it also works in hosts whose
  // iframe sandbox lacks `allow-forms`.
  const form = h(
    'form',
    { class: 'consult-form', novalidate: true, 'aria-labelledby': 'consult-title' },
    h(
      'fieldset',
      { class: 'consult-fields' },
      h('legend', { class: 'sr-only' }, 'Your contact details'),
      field('name', 'Full name', name),
      h('div', { class: 'field-row' }, field('email', 'Email', email), field('phone', 'Phone', phone)),
      field('note', 'Anything we should know', note, true),
      h(
        'div',
        { class: 'field field-consent' },
        h(
          'label',
          { class: 'consent', for: 'f-consent' },
          consent,
          h('span', { class: 'consent-text' }, `I agree that ${pb.studio.name} may contact me by email or phone about my project.`),
        ),
        h('p', { class: 'field-error', id: 'f-consent-error', 'aria-live': 'polite' }),
      ),
    ),
    formError,
    h(
      'div',
      { class: 'consult-actions' },
      submit,
      h('p', { class: 'xsmall muted' }, `Your details are shared only with ${pb.studio.name}.`),
    ),
  )

  form.addEventListener('submit', (ev) => ev.preventDefault())
  form.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && ev.target instanceof HTMLInputElement) {
      ev.preventDefault()
      void submitConsultation(form)
    }
  })
  submit.addEventListener('click', () => void submitConsultation(form))
  for (const control of [name, email, phone, consent]) {
    control.addEventListener(control === consent ? 'change' : 'input', () => {
      if (control.getAttribute('aria-invalid') === 'true') setFieldError(control.name as FieldName, '')
    })
  }

  return h(
    'section',
    { class: 'section consult', 'aria-labelledby': 'consult-title' },
    h(
      'div',
      { class: 'consult-card', id: 'consult' },
      h(
        'div',
        { class: 'consult-intro' },
        h('p', { class: 'eyebrow' }, 'Private consultation'),
        h('h2', { class: 'display', id: 'consult-title' }, 'Book a consultation'),
        h(
          'p',
          { class: 'muted' },
          'Leave your details and the studio will get in touch to arrange a first conversation about your project.',
        ),
      ),
      h('div', { class: 'consult-body', id: 'consult-body' }, form),
    ),
  )
}

function updateNotePlaceholder(): void {
  const note = root.querySelector<HTMLTextAreaElement>('#f-note')
  if (!note || !data) return
  const style = selectedStyle ?? data.filter.style
  const where = data.filter.location
  const bits = [style ? `${style} style` : null, where ? `in ${where}` : null].filter(Boolean).join(' ')
  note.placeholder = bits
    ? `e.g. A three-bedroom apartment, ${bits}, starting next spring`
    : 'e.g. A three-bedroom apartment, starting next spring'
}

function setFieldError(name: FieldName, message: string): void {
  const control = root.querySelector<HTMLInputElement | HTMLTextAreaElement>(`#f-${name}`)
  const err = root.querySelector<HTMLElement>(`#f-${name}-error`)
  if (!control || !err) return
  err.textContent = message
  if (message) control.setAttribute('aria-invalid', 'true')
  else control.removeAttribute('aria-invalid')
}

interface FormValues extends Record<TextField, string> {
  consent: boolean
}

function readForm(form: HTMLFormElement): FormValues {
  const v = (n: TextField) => (form.elements.namedItem(n) as HTMLInputElement | HTMLTextAreaElement | null)?.value.trim() ?? ''
  const consent = (form.elements.namedItem('consent') as HTMLInputElement | null)?.checked === true
  return { name: v('name'), email: v('email'), phone: v('phone'), note: v('note'), consent }
}

/** Light client-side checks only; the server's validation is authoritative. */
function validate(values: FormValues): boolean {
  const errors: Partial<Record<FieldName, string>> = {}
  if (!values.name) errors.name = 'Please tell us your name.'
  if (!values.email) errors.email = 'Please add an email address.'
  else if (!/^[^\s@]+@[^\s@]+$/.test(values.email)) errors.email = 'This email address looks incomplete.'
  if (!values.phone) errors.phone = 'Please add a phone number.'
  if (!values.consent) errors.consent = 'Please confirm that the studio may contact you.'
  const checked = ['name', 'email', 'phone', 'consent'] as const
  for (const n of checked) setFieldError(n, errors[n] ?? '')
  const first = checked.find((n) => errors[n])
  if (first) root.querySelector<HTMLElement>(`#f-${first}`)?.focus()
  return !first
}

let submitting = false

async function submitConsultation(form: HTMLFormElement): Promise<void> {
  if (submitting) return
  const values = readForm(form)
  const formError = form.querySelector<HTMLElement>('#consult-error')
  if (formError) formError.hidden = true
  if (!validate(values)) return

  const fieldset = form.querySelector('fieldset')
  const submit = form.querySelector<HTMLButtonElement>('#consult-submit')
  submitting = true
  fieldset?.setAttribute('disabled', '')
  if (submit) {
    submit.disabled = true
    submit.setAttribute('aria-busy', 'true')
    submit.firstChild!.textContent = 'Sending…'
  }

  const args: { name: string; email: string; phone: string; consent: true; note?: string } = {
    name: values.name,
    email: values.email,
    phone: values.phone,
    consent: true,
  }
  if (values.note) args.note = values.note

  let failure: string | null = null
  let result: CallToolResult | null = null
  try {
    result = await app.callServerTool({ name: 'request_consultation', arguments: args })
    if (result.isError)
      failure = toolErrorMessage(result, 'The studio could not accept this request. Please check your details and try again.')
  } catch (err) {
    failure = thrownMessage(err, 'We could not reach the studio just now. Please try again.')
  }

  submitting = false
  fieldset?.removeAttribute('disabled')
  if (submit) {
    submit.disabled = false
    submit.removeAttribute('aria-busy')
    submit.firstChild!.textContent = 'Request consultation'
  }

  if (failure !== null || !result) {
    if (formError) {
      clear(formError)
      append(formError, [icon('alert'), h('span', {}, failure ?? 'Something went wrong.')])
      formError.hidden = false
    }
    return
  }

  const reference = receiptId(result)
  showReceipt(reference, values.name, resultText(result))
  await handOver(reference, values.note)
}

function receiptId(result: CallToolResult): string | null {
  const sc = result.structuredContent
  const pick = (o: unknown, ...keys: string[]): string | null => {
    if (!isRecord(o)) return null
    for (const k of keys) {
      const v = o[k]
      if (typeof v === 'string' && v) return v
      if (typeof v === 'number') return String(v)
    }
    return null
  }
  const direct = pick(sc, 'id', 'reference', 'request_id', 'consultation_id', 'receipt_id')
  if (direct) return direct
  if (isRecord(sc)) {
    for (const k of ['receipt', 'consultation', 'request', 'lead']) {
      const nested = pick(sc[k], 'id', 'reference')
      if (nested) return nested
    }
  }
  const m = /\b(?:id|reference|ref)\b[\s:#=]*([A-Za-z0-9][A-Za-z0-9_-]{2,})/i.exec(resultText(result))
  return m?.[1] ?? null
}

function showReceipt(reference: string | null, name: string, serverText: string): void {
  const body = root.querySelector<HTMLElement>('#consult-body')
  if (!body) return
  clear(body)
  const first = name.split(/\s+/)[0] ?? name
  append(body, [
    h(
      'div',
      { class: 'receipt', role: 'status', tabindex: -1, id: 'consult-receipt' },
      h('span', { class: 'receipt-mark', 'aria-hidden': 'true' }, icon('check')),
      h(
        'div',
        { class: 'receipt-body' },
        h('h3', { class: 'display receipt-title' }, `Thank you, ${first}.`),
        h('p', {}, 'Your consultation request has been received.'),
        reference ? h('p', { class: 'receipt-ref' }, 'Reference ', h('strong', { class: 'receipt-id' }, reference)) : null,
        // The server's own wording (what was recorded, what was not, what happens next).
        serverText
          ? h(
              'div',
              { class: 'receipt-details muted small' },
              serverText.split(/\n+/).map((line) => h('p', {}, line)),
            )
          : h('p', { class: 'muted small' }, 'The studio will be in touch shortly.'),
      ),
    ),
  ])
  body.querySelector<HTMLElement>('#consult-receipt')?.focus({ preventScroll: true })
}

async function handOver(reference: string | null, note: string): Promise<void> {
  if (!data) return
  const style = selectedStyle ?? data.filter.style
  const where = data.filter.location
  let interest = ''
  if (style) interest = where ? ` I'm drawn to the ${style} style for a project in ${where}.` : ` I'm drawn to the ${style} style.`
  else if (where) interest = ` The project is in ${where}.`
  const ref = reference ? ` (reference ${reference})` : ''
  const noted = note ? ` My note for the studio: "${note}".` : ''
  const text = `I've requested a consultation with ${data.studio.name}${ref}.${interest}${noted} What happens next, and how should I prepare for the first conversation?`
  await tryHost(() => app.sendMessage({ role: 'user', content: [{ type: 'text', text }] }))
}

// ---------------------------------------------------------------------------
// Host wiring
// ---------------------------------------------------------------------------

app.addEventListener('toolinput', (params) => {
  const a = params.arguments ?? {}
  toolInput = { style: nullableStr(a.style), location: nullableStr(a.location) }
  if (data) return
  const bits = [toolInput.style, toolInput.location].filter(Boolean).join(' · ')
  renderPending(bits ? `Preparing the playbook for ${bits}…` : 'Preparing the studio playbook…')
})

app.addEventListener('toolresult', (result) => {
  if (result.isError) {
    renderProblem(toolErrorMessage(result, 'The playbook could not be loaded.'))
    return
  }
  const parsed = parsePlaybook(result.structuredContent)
  if (!parsed) {
    renderProblem(resultText(result) || 'The playbook could not be displayed.')
    return
  }
  data = parsed
  const wanted = parsed.filter.style ?? toolInput.style
  const match = parsed.styles.find((s) => sameStyle(s.name, wanted))
  selectedStyle = match && parsed.styles.length > 1 ? match.name : null
  render(parsed)
})

app.addEventListener('toolcancelled', (params) => {
  if (data) return
  renderProblem(params.reason ? `The playbook request was cancelled (${params.reason}).` : 'The playbook request was cancelled.')
})

connectApp(app).catch((err: unknown) => {
  renderProblem(thrownMessage(err, 'This view could not connect to its host.'))
})
