// show_playbook: the studio's process, signature styles and projects, rendered in the playbook view.

import { countryName, knownLocations } from '../../features/catalogue/places.js'
import { failure, success, type ToolModule } from '../../features/mcp/tool.js'
import { jsonLine } from '../../features/mcp/untrusted.js'
import { buildPlaybookView, findStyle, type PlaybookView } from '../../features/playbook/view.js'
import type { components } from '../../generated/openapi.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import type { Deps } from '../deps.js'

type Args = components['schemas']['PlaybookFilter']

export function playbookText(view: PlaybookView): string {
  const lines = [`${view.studio.name}: ${view.studio.tagline}`, '', 'How we work:']
  view.phases.forEach((p, i) => {
    lines.push(`${i + 1}. ${p.name} (${p.duration_weeks.min}–${p.duration_weeks.max} weeks): ${p.summary}`)
  })
  lines.push('', view.styles.length === 1 ? 'Signature style:' : 'Signature styles:')
  for (const s of view.styles) {
    lines.push(`- ${s.name}: ${s.description}`)
    for (const p of s.projects) {
      lines.push(`  • ${p.title}, ${p.city} (${countryName(p.country)}), ${p.year}, ${p.area_sqm} m², by ${p.designer}: ${p.page_url}`)
    }
    if (s.projects.length === 0)
      lines.push(
        view.filter.location ? `  (no ${s.name} projects in ${jsonLine(view.filter.location)} yet)` : '  (no published projects yet)',
      )
  }
  return lines.join('\n')
}

export const showPlaybook: ToolModule<Deps> = {
  name: 'show_playbook',
  title: 'Studio playbook',
  description:
    "Show the studio's playbook: how a project runs (phases, deliverables, durations), the signature styles with their palettes, " +
    'and signature projects for each style. Optionally narrowed to one style and/or a city or country. Renders an interactive view where the host supports MCP Apps.',
  // The spec's PlaybookFilter, naming this playbook's styles.
  inputSchema: ({ spec, playbook }) => {
    const filter = spec.schema('PlaybookFilter')
    const props = filter.properties as Record<string, JsonSchema>
    const styles = playbook.styles.map((s) => s.name).join(', ')
    return { ...filter, properties: { ...props, style: { ...props.style, description: `${props.style?.description} One of: ${styles}.` } } }
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  ui: { view: 'playbook' },
  async run({ playbook, catalogue, config }, args: Args) {
    const styleName = args.style?.trim() || null
    const location = args.location?.trim() || null
    const style = styleName === null ? null : (findStyle(playbook, styleName) ?? null)
    if (styleName !== null && style === null) {
      return failure(
        `The studio has no signature style called ${jsonLine(styleName)}.`,
        `style must be one of: ${playbook.styles.map((s) => s.name).join(', ')} (or omitted)`,
      )
    }
    const projects = catalogue.current()?.projects ?? []
    const view = buildPlaybookView(playbook, projects, config.publicBaseUrl, { style, location })
    let text = playbookText(view)
    if (location !== null && view.styles.every((s) => s.projects.length === 0)) {
      const places = knownLocations(projects)
      text += `\n\nNo published project matches the location ${jsonLine(location)}.${places.length > 0 ? ` The studio has projects in: ${places.join(', ')}.` : ''}`
    }
    return success(text, view)
  },
}
