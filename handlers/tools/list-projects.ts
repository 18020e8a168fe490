// list_projects: the published catalogue (the Project records of GET /project_metadata.json),
// optionally filtered. Needs read:projects, like getProjects.
import * as z from 'zod'
import { matchKey } from '../names.js'
import { cityMatches, countryMatches, countryName, knownLocations, projectPageUrl } from './playbook.js'
import { failure, success, type ToolModule } from './types.js'

const schema = (styles: string[]) =>
  z.object({
    style: z
      .string()
      .max(100)
      .optional()
      .describe(`Only projects in this style (case-insensitive), e.g. one of: ${styles.join(', ')}.`),
    city: z.string().max(100).optional().describe('Only projects in this city (case-insensitive), e.g. "Lisbon".'),
    country: z
      .string()
      .max(100)
      .optional()
      .describe('Only projects in this country: ISO 3166-1 alpha-2 code or English name, e.g. "JP" or "Japan".'),
  })

export const listProjects: ToolModule<ReturnType<typeof schema>> = {
  name: 'list_projects',
  title: 'List studio projects',
  description:
    "List the studio's published projects (title, designer, styles, location, year, area, summary, tags, images), optionally filtered by style, city and/or country.",
  schema: ({ playbook }) => schema(playbook.styles.map((s) => s.name)),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  scope: 'read:projects',
  async run({ catalogue, config }, args) {
    const view = catalogue.current()
    if (!view) return failure('The studio has not published a project catalogue yet.', 'try again later')
    const style = args.style?.trim() || undefined
    const city = args.city?.trim() || undefined
    const country = args.country?.trim() || undefined
    const projects = view.projects.filter(
      (p) =>
        (style === undefined || p.styles.some((s) => matchKey(s) === matchKey(style))) &&
        (city === undefined || cityMatches(p.location.city, city)) &&
        (country === undefined || countryMatches(p.location.country, country)),
    )
    const filters = [style && `style "${style}"`, city && `city "${city}"`, country && `country "${country}"`].filter(Boolean)
    const lines = [
      `${projects.length} of ${view.projects.length} published projects${filters.length > 0 ? ` matching ${filters.join(', ')}` : ''}.`,
    ]
    for (const p of projects) {
      lines.push(
        `- ${p.title} (${p.styles.join(', ')}), ${p.location.city}, ${countryName(p.location.country)}, ${p.year}, ${p.area_sqm} m², by ${p.designer}: ${projectPageUrl(config.publicBaseUrl, p.id)}`,
      )
    }
    if (projects.length === 0) {
      const styles = [...new Set(view.projects.flatMap((p) => p.styles))].sort()
      lines.push(`Styles in the catalogue: ${styles.join(', ')}.`, `Places: ${knownLocations(view.projects).join(', ')}.`)
    }
    return success(lines.join('\n'), { projects })
  },
}
