// POST /scripts/enquiry_backend.php: store a lead; 200 only after it is durably committed.
import type { FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

type Body = operations['submitLead']['requestBody']['content']['application/json']
type Headers = NonNullable<operations['submitLead']['parameters']['header']>
type Ok = operations['submitLead']['responses'][200]['content']['application/json']

export const submitLead: HandlerModule<Deps> = {
  handler: ({ leads }: Deps) =>
    async function submitLead(request: FastifyRequest<{ Body: Body; Headers: Headers }>): Promise<Ok> {
      const clientId = request.principal?.clientId ?? null
      const owner = clientId ? `client:${clientId}` : `addr:${request.ip}`
      const key = request.headers['idempotency-key' as keyof Headers] as string | undefined
      return leads.submit(request.body, { clientId, owner }, key)
    },
}
