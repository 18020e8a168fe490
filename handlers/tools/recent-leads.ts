// recent_leads: the studio's latest leads (the LeadLogEntry records of GET /leads.json), newest
// first, for the studio's own agent. Needs read:leads, like getLeads: a caller without it gets the
// per-tool challenge. No view: text for the conversation, structuredContent for programs.
import type { components } from '../../generated/openapi.js'
import type { LeadLogEntry } from '../../plugins/leads/index.js'
import { success, type ToolModule } from '../../plugins/mcp/tool.js'
import type { Deps } from '../deps.js'

type Args = components['schemas']['RecentLeadsRequest']

function leadLine(lead: LeadLogEntry): string {
  const from = lead.client_id === null ? 'anonymous' : `client ${lead.client_id}`
  const note = lead.note ? `; note: "${lead.note}"` : ''
  return `- ${lead.received_at}: ${lead.name} <${lead.email}>, ${lead.phone} (${from}, reference ${lead.id})${note}`
}

export const recentLeads: ToolModule<Deps> = {
  name: 'recent_leads',
  title: 'Recent leads',
  description:
    "The studio's most recent consultation requests (leads), newest first: name, email, phone, note, when each was received and through which client. " +
    'Optionally only those received since an instant. Needs an access token with the scope read:leads.',
  inputSchema: ({ spec }) => spec.schema('RecentLeadsRequest'),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  scope: 'read:leads',
  async run({ leads }, args: Args) {
    const found = await leads.recent(args.since, args.limit)
    const since = args.since === undefined ? '' : ` since ${args.since}`
    const head =
      found.length === 0
        ? `No leads received${since}.`
        : `The ${found.length === 1 ? 'latest lead' : `${found.length} latest leads`} received${since}, newest first:`
    return success([head, ...found.map(leadLine)].join('\n'), { leads: found })
  },
}
