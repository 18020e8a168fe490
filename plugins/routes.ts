// Binds every spec operation to its handler with fastify-openapi-glue. Per-operation settings
// come from the spec: security schemes, `x-rate-limit`, `x-body-limit`, request content types.
import type { FastifyReply, FastifyRequest, RouteOptions, RouteShorthandOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { type Deps, handlerModules } from '../handlers/index.js'
import { AppError } from './errors/codes.js'
import { type OpenApiDocument, type Operation, operations } from './spec.js'

type RateLimitMax = number | ((request: FastifyRequest, key: string) => number)

/** The route's rate limit: the spec's `x-rate-limit`, then configuration overrides. */
export function rateLimitFor(op: Operation, config: Config, allowAnonymous: boolean) {
  const declared = op['x-rate-limit']
  if (!declared) return undefined
  const override = config.rateLimits[op.operationId] ?? {}
  const max = override.max ?? declared.max
  const anonymousMax = config.rateLimits[`${op.operationId}Anonymous`]?.max ?? declared.anonymous_max
  const limit: RateLimitMax =
    allowAnonymous && anonymousMax !== undefined ? (_req, key) => (key.startsWith('addr:') ? anonymousMax : max) : max
  return { max: limit, timeWindow: override.window ?? declared.window }
}

/**
 * Before the body is read: a body the operation requires must be there, in a content type the
 * spec declares for it (Fastify would otherwise parse text/plain and skip validation).
 */
export function bodyGuard(types: readonly string[]) {
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const length = request.headers['content-length']
    const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
    if (!hasBody) {
      throw new AppError('invalid_request', 'The request body is empty.', `send the body as ${types.join(' or ')}`)
    }
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
    if (!types.includes(mediaType)) {
      throw new AppError(
        'unsupported_media_type',
        mediaType ? `This operation does not accept ${mediaType} bodies.` : 'The request body has no Content-Type.',
        `send the body as ${types.join(' or ')}, with that Content-Type header`,
      )
    }
    return payload
  }
}

/** Does the (effective) spec let this operation be called without credentials? */
export const allowsAnonymous = (op: Operation): boolean => (op.security ?? []).some((requirement) => Object.keys(requirement).length === 0)

export default fp<{ config: Config; spec: OpenApiDocument; effectiveSpec: OpenApiDocument; deps: Deps }>(
  async (app, { config, spec, effectiveSpec, deps }) => {
    const ops = operations(spec)
    const effective = operations(effectiveSpec)
    for (const id of ops.keys()) {
      if (!handlerModules[id]) throw new Error(`The spec's operation ${id} has no handler: add handlers/${id}.ts`)
    }

    const operationResolver = (operationId: string): RouteOptions => {
      const op = ops.get(operationId)
      const mod = handlerModules[operationId]
      if (!op || !mod) throw new Error(`no handler for ${operationId}`)
      const allowAnonymous = allowsAnonymous(effective.get(operationId) ?? op)
      const options: RouteShorthandOptions & { handler: unknown } = {
        ...mod.routeOptions,
        handler: mod.handler(deps),
        config: {
          ...mod.routeOptions?.config,
          securitySchemes: [...new Set((op.security ?? []).flatMap((r) => Object.keys(r)))],
          allowAnonymous,
        },
      }
      const rateLimit = rateLimitFor(op, config, allowAnonymous)
      if (rateLimit && options.config) options.config.rateLimit = rateLimit
      if (op['x-body-limit'] !== undefined) options.bodyLimit = op['x-body-limit']
      if (op.requestBody) options.preParsing = [bodyGuard(Object.keys(op.requestBody.content))]
      // glue adds method, url, schema and the security preHandler to these options.
      return options as RouteOptions
    }

    // glue sees the spec as written: an anonymous alternative `{}` would let a request with a bad
    // token through as anonymous; the security handlers honour `allowAnonymous` instead.
    await app.register(openapiGlue, {
      specification: spec,
      operationResolver,
      securityHandlers: deps.auth.securityHandlers,
    })
  },
  { name: 'routes', fastify: '5.x', dependencies: ['auth', 'rate-limit', 'errors'] },
)
