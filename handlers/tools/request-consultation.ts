// request_consultation: a prospect's contact details, validated against the spec's Lead schema
// (the same Ajv and the same hints as POST /scripts/enquiry_backend.php) and stored through the
// same LeadIntake, so a lead from MCP is indistinguishable from one posted over HTTP.
// Needs write:leads, like submitLead.
import type { ValidateFunction } from 'ajv'
import * as z from 'zod'
import { componentSchema, loadSpec } from '../../plugins/spec.js'
import { compileBodySchema, validationError } from '../../plugins/validation.js'
import { failure, success, type ToolModule } from './types.js'

let leadValidator: ValidateFunction | undefined
/** The spec's Lead schema, compiled once. */
function validateLead(): ValidateFunction {
  leadValidator ??= compileBodySchema(componentSchema(loadSpec(), 'Lead'))
  return leadValidator
}

function leadField(name: 'name' | 'email' | 'phone'): string {
  const schema = componentSchema(loadSpec(), 'Lead') as { properties: Record<string, { description?: string }> }
  return schema.properties[name]?.description ?? name
}

const schema = () =>
  z.object({
    name: z.string().describe(leadField('name')),
    email: z.string().describe(leadField('email')),
    phone: z.string().describe(leadField('phone')),
    note: z
      .string()
      .max(2000)
      .optional()
      .describe('Optional message for the studio. Only the contact details are recorded, so the note is not stored with the request.'),
  })

export const requestConsultation: ToolModule<ReturnType<typeof schema>> = {
  name: 'request_consultation',
  title: 'Request a consultation',
  description:
    "Ask the studio to get in touch about a project: records the prospect's name, email and phone (with their consent) and returns a receipt " +
    'with a reference. Call it only when the person has asked to be contacted.',
  schema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  scope: 'write:leads',
  ui: { visibility: ['model', 'app'] },
  async run({ intake }, args, caller) {
    const lead = { name: args.name, email: args.email, phone: args.phone }
    const validate = validateLead()
    if (!validate(lead)) {
      const err = validationError(validate.errors ?? [])
      return failure(err.message.replace(/^The request body/, 'The consultation request'), err.hint)
    }
    const receipt = await intake.submit(lead, { clientId: caller.clientId, owner: `client:${caller.clientId}` })
    const lines = [
      `Consultation request received (reference ${receipt.id}, ${receipt.received_at}). The studio will contact ${lead.name.trim()} by email or phone.`,
    ]
    if (args.note?.trim()) {
      lines.push('The note was not stored: the studio records contact details only, so please mention it when the studio gets in touch.')
    }
    return success(lines.join('\n'), receipt)
  },
}
