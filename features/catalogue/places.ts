// Places of the catalogue's projects: country names from ISO codes, and matching the cities and
// countries people type against them (one rule, shared by the MCP tools and the project pages).
import type { Project } from './file.js'
import { matchKey } from './names.js'

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

/** "Lisbon, Lisbon District, Portugal" (the region when there is one and it is not the city's name). */
export function placeOf(project: Project): string {
  const { city, region, country } = project.location
  return [city, region !== city ? region : undefined, countryName(country)].filter(Boolean).join(', ')
}
