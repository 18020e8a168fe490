// The playbook view (the structuredContent of show_playbook): the process phases, the signature
// styles and, per style, signature projects from the published catalogue. Pure functions.

import type { Project } from '../catalogue/file.js'
import { matchKey } from '../catalogue/names.js'
import { projectPageUrl } from '../catalogue/pages.js'
import { locationMatches } from '../catalogue/places.js'
import type { Playbook, PlaybookProject, PlaybookStyle, PlaybookView } from './view-types.js'

export type { Phase, Playbook, PlaybookProject, PlaybookStyle, PlaybookView } from './view-types.js'

/** Projects shown per style: a short overview of every style, more once the user narrows it down. */
export const SIGNATURE_PROJECTS_PER_STYLE = 6
export const OVERVIEW_PROJECTS_PER_STYLE = 3

export function findStyle(playbook: Playbook, style: string): PlaybookStyle | undefined {
  const want = matchKey(style)
  return playbook.styles.find((s) => matchKey(s.name) === want)
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
