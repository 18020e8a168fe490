// list_projects: the published catalogue (the Project records of GET /project_metadata.json),
// optionally filtered. Public: the catalogue is the studio's marketing content, so agents need no
// token for it (over HTTP, getProjects keeps its read:projects contract for API clients).

import { matchKey } from '../../features/catalogue/names.js'
import { projectPageUrl } from '../../features/catalogue/pages.js'
import { cityMatches, countryMatches, countryName, knownLocations } from '../../features/catalogue/places.js'
import { failure, success, type ToolModule } from '../../features/mcp/tool.js'
import { jsonLine } from '../../features/mcp/untrusted.js'
import type { components } from '../../generated/openapi.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import type { Deps } from '../deps.js'

type Args = components['schemas']['ProjectFilter']

export const listProjects: ToolModule<Deps> = {
  name: 'list_projects',
  title: 'List studio projects',
  description:
    "List the studio's published projects (title, designer, styles, location, year, area, summary, tags, images), optionally filtered by style, city and/or country.",
  // The spec's ProjectFilter, naming the studio's styles.
  inputSchema: ({ spec, playbook }) => {
    const filter = spec.schema('ProjectFilter')
    const props = filter.properties as Record<string, JsonSchema>
    const styles = playbook.styles.map((s) => s.name).join(', ')
    return {
      ...filter,
      properties: { ...props, style: { ...props.style, description: `${props.style?.description} E.g. one of: ${styles}.` } },
    }
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run({ catalogue, config }, args: Args) {
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
    // The caller's filters, quoted as JSON strings: nothing in them can read as a line of the list.
    const filters = [
      style && `style ${jsonLine(style)}`,
      city && `city ${jsonLine(city)}`,
      country && `country ${jsonLine(country)}`,
    ].filter(Boolean)
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
