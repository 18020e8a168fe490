// POST /api/token: OAuth 2.0 client credentials (RFC 6749 §4.4), errors per §5.2, tokens bound to
// the resources they are requested for (RFC 8707).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import { grantResources, grantScopes, parseBasicAuth } from '../plugins/auth/rules.js'
import { AppError } from '../plugins/errors/codes.js'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

type Body = operations['issueToken']['requestBody']['content']['application/x-www-form-urlencoded']
type Ok = operations['issueToken']['responses'][200]['content']['application/json']

const basicChallenge = { 'www-authenticate': 'Basic realm="studio-api"' }

function invalidClient(hint: string): AppError {
  return new AppError('invalid_client', 'Client authentication failed.', hint, basicChallenge)
}

export const issueToken: HandlerModule<Deps> = {
  routeOptions: { config: { oauthErrors: true } },
  handler: ({ auth, authFailures }: Deps) =>
    async function issueToken(request: FastifyRequest<{ Body: Body }>, reply: FastifyReply): Promise<Ok> {
      const body = request.body
      if (body.grant_type !== 'client_credentials') {
        throw new AppError(
          'unsupported_grant_type',
          `The grant type "${body.grant_type}" is not supported.`,
          'send grant_type=client_credentials',
        )
      }

      const basic = parseBasicAuth(request.headers.authorization)
      const inBody = body.client_id !== undefined || body.client_secret !== undefined
      if (basic === null) throw invalidClient('send "Authorization: Basic base64(client_id:client_secret)"')
      if (basic && inBody) {
        throw new AppError(
          'invalid_request',
          'The client authenticated in two ways at once.',
          'send the credentials either as HTTP Basic or as client_id and client_secret in the body, not both',
        )
      }
      const clientId = basic?.clientId ?? body.client_id
      const secret = basic?.secret ?? body.client_secret
      if (!clientId || !secret) {
        throw invalidClient('authenticate the client with HTTP Basic (client_id:client_secret) or client_id and client_secret in the body')
      }

      // Counted as a failure before the secret is checked; given back unless it fails.
      const attempt = await authFailures.attempt(request, clientId)
      if (attempt instanceof AppError) throw attempt
      const client = await auth.authenticateClient(clientId, secret).catch((err: unknown) => {
        attempt.release()
        throw err
      })
      if (!client) throw invalidClient('check the client_id and client_secret; a revoked client cannot get tokens')
      attempt.release()

      const grant = grantScopes(body.scope, client.scopes.split(' '))
      if (!grant.ok) throw new AppError('invalid_scope', grant.reason, grant.hint)
      const target = grantResources(body.resource, auth.resources.all, auth.resources.api)
      if (!target.ok) throw new AppError('invalid_target', target.reason, target.hint)

      reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      return auth.issue(client, grant.scopes, target.audience)
    },
}
