// Binds every spec operation to its handler with fastify-openapi-glue. The app passes the
// handler registry (handlers/index.ts) and what handlers are given in; this plugin never imports
// a handler. Per-operation settings come from the spec: security requirements (checked before
// the body is read, by the auth plugin's security gate), `x-rate-limit` (through app.budgets),
// `x-body-limit`, request content types, deprecations (`deprecated`, `x-sunset`: ./deprecation.ts).
import type { FastifyReply, FastifyRequest, RouteOptions, RouteShorthandOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { securityGate } from '../auth/gate.js'
import type { Operation } from '../spec/document.js'
import { bodyGuard } from './body-guard.js'
import { deprecationHeaders, deprecationHook } from './deprecation.js'

// biome-ignore lint/suspicious/noExplicitAny: glue passes each route's own request type
export type Handler = (request: FastifyRequest<any>, reply: FastifyReply) => Promise<unknown>

/** A handler module: the handler factory over its dependencies, and route options of its own. */
export interface HandlerModule<D> {
  handler: (deps: D) => Handler
  routeOptions?: RouteShorthandOptions
}

/** Does the served spec let this operation be called without credentials? */
export const allowsAnonymous = (op: Operation): boolean => (op.security ?? []).some((requirement) => Object.keys(requirement).length === 0)

export interface RoutesOptions<D> {
  config: Config
  /** The handler of every operation, by operationId. */
  handlers: Readonly<Record<string, HandlerModule<D>>>
  deps: D
}

async function routes<D>(app: import('fastify').FastifyInstance, { config, handlers, deps }: RoutesOptions<D>): Promise<void> {
  const ops = app.spec.operations
  const served = app.spec.served(config)
  const servedOps = new Map(Object.values(served.paths).flatMap((item) => Object.values(item).map((op) => [op.operationId, op] as const)))
  const boundAt = new Date()
  for (const id of ops.keys()) {
    if (!handlers[id]) throw new Error(`The spec's operation ${id} has no handler: add handlers/${id}.ts and list it in handlers/index.ts`)
  }

  const operationResolver = (operationId: string): RouteOptions => {
    const op = ops.get(operationId)
    const mod = handlers[operationId]
    if (!op || !mod) throw new Error(`no handler for ${operationId}`)
    const allowAnonymous = allowsAnonymous(servedOps.get(operationId) ?? op)
    const options: RouteShorthandOptions & { handler: unknown } = {
      ...mod.routeOptions,
      handler: mod.handler(deps),
      config: {
        ...mod.routeOptions?.config,
        securitySchemes: [...new Set((op.security ?? []).flatMap((r) => Object.keys(r)))],
        allowAnonymous,
      },
    }
    const rateLimit = app.budgets.forOperation(op, allowAnonymous)
    if (rateLimit && options.config) options.config.rateLimit = rateLimit
    if (op['x-body-limit'] !== undefined) options.bodyLimit = op['x-body-limit']
    // Before the body is read: credentials first (401/403), then the body's presence and type.
    // The gate reads the spec as written: an anonymous alternative `{}` would let a request with
    // a bad token through as anonymous; the security handlers honour `allowAnonymous` instead.
    const preParsing = [
      ...(op.security?.length ? [securityGate(app.auth.securityHandlers, op.security)] : []),
      ...(op.requestBody ? [bodyGuard(Object.keys(op.requestBody.content))] : []),
    ]
    if (preParsing.length > 0) options.preParsing = preParsing
    // A deprecated operation, parameter or field (the spec's `deprecated: true`, `x-sunset`): the
    // headers on every response of the route, its errors included.
    const deprecation = app.spec.deprecation(operationId)
    if (deprecation) {
      const hook = deprecationHook(deprecationHeaders(deprecation, `${config.publicBaseUrl}/changelog`, boundAt))
      options.onSend = [...[mod.routeOptions?.onSend ?? []].flat(), hook]
    }
    // glue adds method, url and schema to these options (no security handlers are given to it:
    // the gate above has checked them already).
    return options as RouteOptions
  }

  await app.register(openapiGlue, { specification: app.spec.document, operationResolver })
}

export default fp(routes, { name: 'routes', fastify: '5.x', dependencies: ['spec', 'auth', 'rate-limit', 'errors'] })
