// What handlers are given: services, not Fastify. Built once by the app.
import type { FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify'
import type { Config } from '../config.js'
import type { Auth } from '../plugins/auth/index.js'
import type { Catalogue } from '../plugins/catalogue.js'
import type { Store } from '../plugins/store/open.js'
import type { LeadIntake } from './leads/intake.js'

/** Failed client authentications, counted per client id and per address. */
export interface FailureGuard {
  /** Seconds until another attempt is allowed, or 0 when it is allowed now. */
  retryAfter(request: FastifyRequest, clientId: string): Promise<number>
  record(request: FastifyRequest, clientId: string): Promise<void>
}

export interface Deps {
  config: Config
  store: Store
  auth: Auth
  catalogue: Catalogue
  intake: LeadIntake
  authFailures: FailureGuard
}

// biome-ignore lint/suspicious/noExplicitAny: glue passes each route's own request type
export type Handler = (request: FastifyRequest<any>, reply: FastifyReply) => Promise<unknown>

/** A handler module: the handler factory, and route options of its own (merged by the resolver). */
export interface HandlerModule {
  handler: (deps: Deps) => Handler
  routeOptions?: RouteShorthandOptions
}
