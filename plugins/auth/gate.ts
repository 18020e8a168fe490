// An operation's security requirements, checked before a byte of its body is read (preParsing),
// so a request without credentials is refused at once instead of after its whole body arrived,
// and before its body or query is validated (a stranger learns nothing from a 400). OpenAPI's
// rule: any one requirement object passes, with all of its schemes; `{}` passes as anonymous.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors/codes.js'

/** A security handler, named after its scheme in the spec, given the operation's scopes. */
export type SecurityHandler = (request: FastifyRequest, reply: FastifyReply, scopes: string[]) => Promise<void>

export function securityGate(handlers: Readonly<Record<string, SecurityHandler>>, requirements: readonly Record<string, string[]>[]) {
  for (const scheme of requirements.flatMap((r) => Object.keys(r))) {
    if (!handlers[scheme]) throw new Error(`the spec's security scheme ${scheme} has no security handler`)
  }
  return async (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    const refusals: AppError[] = []
    for (const requirement of requirements) {
      try {
        for (const [scheme, scopes] of Object.entries(requirement)) await handlers[scheme]?.(request, reply, scopes)
        return payload
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        refusals.push(err)
      }
    }
    // The most specific refusal wins: a token without the scope (403) over no token (401).
    throw refusals.find((e) => e.statusCode === 403) ?? refusals[0] ?? new AppError('unauthorized')
  }
}
