// POST /scripts/enquiry_backend.php: store a lead; 200 only after it is durably committed.
// With a token the lead comes from a client (`source: api`); without one, from the website form
// (`source: form`, only with LEADS_ALLOW_ANONYMOUS=true), which must carry the person's consent:
// the server refuses it otherwise, whatever the page's script did.
import type { FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import { clientAddress } from '../lib/address.js'
import { AppError } from '../plugins/errors/codes.js'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

type Body = operations['submitLead']['requestBody']['content']['application/json']
type Headers = NonNullable<operations['submitLead']['parameters']['header']>
type Ok = operations['submitLead']['responses'][200]['content']['application/json']

export const submitLead: HandlerModule<Deps> = {
  handler: ({ leads }: Deps) =>
    async function submitLead(request: FastifyRequest<{ Body: Body; Headers: Headers }>): Promise<Ok> {
      const clientId = request.principal?.clientId ?? null
      // Anonymous keys are the address's as budgets count it (IPv6: its /64), so that a retry
      // from a rotated IPv6 privacy address still finds its first receipt.
      const owner = clientId ? `client:${clientId}` : `addr:${clientAddress(request)}`
      const key = request.headers['idempotency-key' as keyof Headers] as string | undefined
      // Consent is a fact about this submission, not a field of the lead (nor of its idempotency hash).
      const { consent, ...lead } = request.body
      if (clientId === null && consent !== true) {
        throw new AppError(
          'invalid_request',
          'An anonymous submission (the website form) needs the person’s consent.',
          '`consent` must be true: send it only when the person has ticked the box agreeing that the studio may contact them',
        )
      }
      return leads.submit(lead, { clientId, owner, source: clientId ? 'api' : 'form', consent: consent === true }, key)
    },
}
