// request_consultation: a prospect's contact details and note, validated against the spec's lead
// fields (the same Ajv and the same hints as POST /scripts/enquiry_backend.php) and stored through
// the same intake, so a lead from MCP is indistinguishable from one posted over HTTP. It needs the
// prospect's explicit consent (`consent: true`). Agents without a token may call it, like the
// website form's anonymous switch, within a per-address budget, unless the operator turns that off
// (MCP_ANONYMOUS_CONSULTATIONS=false); a token that is sent must grant write:leads, like submitLead.

import { type NamedBudget, success, type ToolModule } from '../../features/mcp/tool.js'
import type { components } from '../../generated/openapi.js'
import type { Deps } from '../deps.js'

type Args = components['schemas']['ConsultationRequest']

/** Anonymous consultation requests per address, as the website form's (RATE_LIMITS names it). */
export const ANONYMOUS_CONSULTATIONS: NamedBudget = { name: 'requestConsultationAnonymous', max: 10, window: '1 minute' }

export const requestConsultation: ToolModule<Deps> = {
  name: 'request_consultation',
  title: 'Request a consultation',
  description:
    "Ask the studio to get in touch about a project: records the prospect's name, email, phone and an optional note, and returns a receipt " +
    'with a reference. Call it only when the person has asked to be contacted and has agreed that the studio may contact them (consent: true).',
  inputSchema: ({ spec }) => spec.schema('ConsultationRequest'),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  scope: 'write:leads',
  anonymous: { allowed: ({ config }) => config.mcpAnonymousConsultations, budget: ANONYMOUS_CONSULTATIONS },
  ui: { visibility: ['model', 'app'] },
  async run({ leads }, args: Args, caller) {
    // Consent is required to call at all; what is stored is the lead, its source and the consent's time.
    const { consent: _consent, ...lead } = args
    const receipt = await leads.submit(lead, { clientId: caller.clientId, owner: caller.owner, source: 'agent', consent: true })
    const lines = [
      // The name is not echoed: the text is read by an agent, and a name is anyone's text.
      `Consultation request received (reference ${receipt.id}, ${receipt.received_at}). The studio will contact the person by email or phone.`,
    ]
    if (lead.note?.trim()) lines.push('The note was passed on to the studio with the request.')
    return success(lines.join('\n'), receipt)
  },
}
