// The studio playbook (data/playbook.json) and its view: the process phases, the signature styles
// and, per style, signature projects from the published catalogue. Pure functions but the loader.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../../config.js'
import type { Project } from '../../plugins/catalogue.js'
import { matchKey } from '../names.js'
import type { Phase, Playbook, PlaybookProject, PlaybookStyle, PlaybookView } from './playbook-view.js'

export type { Phase, Playbook, PlaybookProject, PlaybookStyle, PlaybookView } from './playbook-view.js'

/** Projects shown per style: a short overview of every style, more once the user narrows it down. */
export const SIGNATURE_PROJECTS_PER_STYLE = 6
export const OVERVIEW_PROJECTS_PER_STYLE = 3

export const playbookFile = join(projectRoot, 'data', 'playbook.json')

// ---------------------------------------------------------------------------
// Loading (validated once at start-up; a bad file stops the server with the key named)
// ---------------------------------------------------------------------------

function fail(path: string, what: string): never {
  throw new Error(`playbook: "${path}" ${what}`)
}
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function text(o: Record<string, unknown>, key: string, path: string): string {
  const v = o[key]
  if (typeof v !== 'string' || v.trim() === '') fail(`${path}.${key}`, 'must be a non-empty string')
  return v
}

function texts(o: Record<string, unknown>, key: string, path: string): string[] {
  const v = o[key]
  if (!Array.isArray(v) || v.length === 0 || v.some((s) => typeof s !== 'string' || s.trim() === '')) {
    fail(`${path}.${key}`, 'must be a non-empty array of non-empty strings')
  }
  return [...(v as string[])]
}

function list(o: Record<string, unknown>, key: string): Record<string, unknown>[] {
  const v = o[key]
  if (!Array.isArray(v) || v.length === 0 || !v.every(isRecord)) fail(key, 'must be a non-empty array of objects')
  return v as Record<string, unknown>[]
}

/** Validates a playbook document and keeps exactly the fields the view is made of. */
export function parsePlaybook(json: unknown): Playbook {
  if (!isRecord(json)) fail('(root)', 'must be an object')
  if (!isRecord(json.studio)) fail('studio', 'must be an object')
  const studio = { name: text(json.studio, 'name', 'studio'), tagline: text(json.studio, 'tagline', 'studio') }
  const phases = list(json, 'phases').map((p, i): Phase => {
    const path = `phases[${i}]`
    const d = p.duration_weeks
    if (!isRecord(d) || typeof d.min !== 'number' || typeof d.max !== 'number' || d.min <= 0 || d.max < d.min) {
      fail(`${path}.duration_weeks`, 'must be {min, max} with 0 < min <= max')
    }
    return {
      id: text(p, 'id', path),
      name: text(p, 'name', path),
      summary: text(p, 'summary', path),
      deliverables: texts(p, 'deliverables', path),
      duration_weeks: { min: d.min, max: d.max },
    }
  })
  const seen = new Set<string>()
  const styles = list(json, 'styles').map((s, i): PlaybookStyle => {
    const path = `styles[${i}]`
    const name = text(s, 'name', path)
    if (seen.has(matchKey(name))) fail(`${path}.name`, 'duplicates another style')
    seen.add(matchKey(name))
    const palette = texts(s, 'palette', path)
    if (palette.some((c) => !/^#[0-9A-Fa-f]{6}$/.test(c))) fail(`${path}.palette`, 'must hold #RRGGBB colours')
    return { name, description: text(s, 'description', path), palette }
  })
  return { studio, phases, styles }
}

export function loadPlaybook(file: string = playbookFile): Playbook {
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new Error(`playbook: cannot read ${file}: ${(err as Error).message}`)
  }
  return parsePlaybook(json)
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' })
/** Common names people use that are not the English short name of the country. */
const COUNTRY_ALIASES: Record<string, string> = {
  uk: 'GB',
  britain: 'GB',
  greatbritain: 'GB',
  england: 'GB',
  usa: 'US',
  america: 'US',
  uae: 'AE',
}

/** English name of an ISO 3166-1 alpha-2 code ("PT" → "Portugal"); the code when unknown. */
export function countryName(code: string): string {
  try {
    return regionNames.of(code.toUpperCase()) ?? code
  } catch {
    return code
  }
}

/** Does `query` name the country of this ISO code (the code, its English name or a common alias)? */
export function countryMatches(code: string, query: string): boolean {
  const want = matchKey(query)
  const country = code.toUpperCase()
  return want !== '' && (matchKey(country) === want || matchKey(countryName(country)) === want || COUNTRY_ALIASES[want] === country)
}

export function cityMatches(city: string, query: string): boolean {
  const want = matchKey(query)
  return want !== '' && matchKey(city) === want
}

/** Does `location` name the project's city or country? */
export function locationMatches(project: Project, location: string): boolean {
  return cityMatches(project.location.city, location) || countryMatches(project.location.country, location)
}

/** "Lisbon (Portugal)" for each place the catalogue has projects in, for hints. */
export function knownLocations(projects: readonly Project[]): string[] {
  const places = new Set(projects.map((p) => `${p.location.city} (${countryName(p.location.country)})`))
  return [...places].sort((a, b) => a.localeCompare(b))
}

export function findStyle(playbook: Playbook, style: string): PlaybookStyle | undefined {
  const want = matchKey(style)
  return playbook.styles.find((s) => matchKey(s.name) === want)
}

// ---------------------------------------------------------------------------
// The view
// ---------------------------------------------------------------------------

export function projectPageUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/projects/${encodeURIComponent(id)}`
}

export function playbookProject(project: Project, baseUrl: string): PlaybookProject {
  const first = project.images[0]
  return {
    id: project.id,
    title: project.title,
    designer: project.designer,
    city: project.location.city,
    country: project.location.country,
    year: project.year,
    area_sqm: project.area_sqm,
    image: first ? { url: first.url, alt: first.alt } : null,
    page_url: projectPageUrl(baseUrl, project.id),
  }
}

const newestFirst = (a: Project, b: Project): number => b.year - a.year || a.title.localeCompare(b.title)

/**
 * The playbook with the signature projects of each style. A style filter keeps that style only
 * (the caller checks that it exists); a location filter keeps the projects in that city or country.
 */
export function buildPlaybookView(
  playbook: Playbook,
  projects: readonly Project[],
  baseUrl: string,
  filter: { style: PlaybookStyle | null; location: string | null },
): PlaybookView {
  const styles = filter.style ? [filter.style] : playbook.styles
  const located = filter.location === null ? projects : projects.filter((p) => locationMatches(p, filter.location as string))
  const perStyle = filter.style || filter.location ? SIGNATURE_PROJECTS_PER_STYLE : OVERVIEW_PROJECTS_PER_STYLE
  return {
    studio: { ...playbook.studio },
    phases: playbook.phases.map((p) => ({ ...p, deliverables: [...p.deliverables], duration_weeks: { ...p.duration_weeks } })),
    styles: styles.map((s) => ({
      name: s.name,
      description: s.description,
      palette: [...s.palette],
      projects: located
        .filter((p) => p.styles.some((name) => matchKey(name) === matchKey(s.name)))
        .sort(newestFirst)
        .slice(0, perStyle)
        .map((p) => playbookProject(p, baseUrl)),
    })),
    filter: { style: filter.style?.name ?? null, location: filter.location },
  }
}
