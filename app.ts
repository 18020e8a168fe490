// The app factory: everything the API is, for a given configuration and spec. It only composes:
// each plugin owns one concern (plugins/<name>/index.ts), the handlers and MCP tools are handed to
// the plugins that bind them. server.ts adds the process concerns (logger destination, signals,
// listen); tests build the app and inject.
//
// A request passes, in order (README "How it fits together"):
//   onRequest     headers (the security headers of its kind) → errors (X-API-Version,
//                 X-Request-Id) → auth (resolve the caller from the token) → rate-limit
//                 (route-level: keyed by the verified client, else the address)
//   preParsing    health (503 while closing) → security gate (credentials and scopes) → body
//                 guard (content type), before a byte of the body is read
//   parse, validation (Ajv, from the spec)
//   handler       handlers/<operationId>.ts, over the services in handlers/deps.ts
//   onSend        rate-limit (counts what no route limiter counted)
//   onResponse    metrics → request log
// Before any of it, what the server refuses to read answers from plugins/errors/raw.ts.
import { randomUUID } from 'node:crypto'
import formbody from '@fastify/formbody'
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify'
import type { Config } from './config.js'
import backup from './features/backup/index.js'
import { snapshotBeforeMigrating } from './features/backup/premigration.js'
import catalogue from './features/catalogue/index.js'
import email from './features/email/index.js'
import leads from './features/leads/index.js'
import mcp, { mcpBudgetNames } from './features/mcp/index.js'
import playbook from './features/playbook/index.js'
import pricing from './features/pricing/index.js'
import privacy from './features/privacy/index.js'
import staff from './features/staff/index.js'
import { ROUTES as STAFF_ROUTES } from './features/staff/provider.js'
import webhooks from './features/webhooks/index.js'
import type { Deps } from './handlers/deps.js'
import { operationHandlers } from './handlers/index.js'
import { TOOLS } from './handlers/tools/index.js'
import { AUTH_FAILURE_BUDGETS } from './plugins/auth/failures.js'
import auth from './plugins/auth/index.js'
import { signingKeyFrom } from './plugins/auth/keys.js'
import connections from './plugins/connections/index.js'
import cors from './plugins/cors/index.js'
import docs from './plugins/docs/index.js'
import errors, { frameworkErrorHandler } from './plugins/errors/index.js'
import { clientErrorHandler } from './plugins/errors/raw.js'
import headers, { securityHeaders } from './plugins/headers/index.js'
import health from './plugins/health/index.js'
import home from './plugins/home/index.js'
import metrics from './plugins/metrics/index.js'
import { budgetNames, checkRateLimitNames } from './plugins/rate-limit/budgets.js'
import rateLimit from './plugins/rate-limit/index.js'
import requestLog from './plugins/request-log/index.js'
import routes from './plugins/routes/index.js'
import spec, { Spec } from './plugins/spec/index.js'
import { loadSpec } from './plugins/spec/load.js'
import store from './plugins/store/index.js'
import validation from './plugins/validation/index.js'
import { buildSerializer } from './plugins/validation/serializer.js'

export interface BuildOptions {
  logger?: FastifyServerOptions['logger']
  /** A variant of the spec (tests); default spec/openapi.yaml. */
  spec?: Spec
  /** Benchmark only: SQLite commits without fsync (see server.ts StartOptions). */
  unsafeNoFsync?: boolean
  /** How often retention is checked (features/privacy; default hourly): tests shorten it. */
  retentionEveryMs?: number
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * CORS by path (plugins/cors): what a browser-based OAuth client (the MCP Inspector) calls on its
 * own is open to any origin, without credentials: the metadata documents and the JWKS, the token
 * endpoint, registration and revocation. The staff sign-in pages under /oauth/ never are.
 */
const CORS_PATHS = {
  open: ['/.well-known/', STAFF_ROUTES.token, STAFF_ROUTES.registration, STAFF_ROUTES.revocation],
  closed: ['/oauth/'],
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const theSpec = options.spec ?? new Spec(loadSpec())
  // The security headers of each kind of response, computed once: for the headers plugin, and for
  // what Node and Fastify answer before any hook runs (parser refusals, CONNECT, malformed URLs).
  const policy = securityHeaders(config.publicBaseUrl, theSpec.version)
  const app = Fastify({
    logger: options.logger ?? false,
    // Fastify's own per-request lines are off: request-log writes one line per request instead.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    // A caller's X-Request-Id is kept when it is sane, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    trustProxy: config.trustProxy,
    bodyLimit: 64 * 1024,
    // The store plugin snapshots and migrates an existing database at start after an upgrade
    // (features/backup/premigration.ts): on a large file or a slow disk that outlasts Fastify's
    // 10 s default, and a start cut off mid-migration helps nobody. Ten minutes still ends a
    // plugin that never settles.
    pluginTimeout: 10 * 60_000,
    // Closing is answered by the health plugin with our Error shape instead.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: false },
    // Timeouts (README "Security"): a request must arrive whole within requestTimeout (408
    // otherwise), its headers within headersTimeout; Node checks them every second (its default
    // of 30 s would let a slow client overstay by that much). Node's own Host check is off: the
    // errors plugin answers a missing Host with the Error body.
    requestTimeout: config.requestTimeoutSeconds * 1000,
    connectionTimeout: config.connectionTimeoutSeconds * 1000,
    keepAliveTimeout: config.keepAliveTimeoutSeconds * 1000,
    http: { headersTimeout: config.headersTimeoutSeconds * 1000, connectionsCheckingInterval: 1000, requireHostHeader: false },
    clientErrorHandler: clientErrorHandler(policy.api, config.requestTimeoutSeconds),
    frameworkErrors: frameworkErrorHandler(policy.api),
    // Fastify's serializer, each response schema compiled once per process (serializer.ts).
    schemaController: { compilersFactory: { buildSerializer } },
  })
  try {
    // The whole configuration is checked before any plugin creates anything (the data folder, a
    // bootstrap client): RATE_LIMITS against every budget's name, JWT_PRIVATE_KEY as a key.
    if (config.jwtPrivateKey !== undefined) signingKeyFrom(config.jwtPrivateKey)
    checkRateLimitNames(
      config.rateLimits,
      budgetNames(theSpec.operations.values(), [...Object.keys(AUTH_FAILURE_BUDGETS), ...mcpBudgetNames(TOOLS)]),
    )
    await registerAll(app, config, options, theSpec, policy)
  } catch (err) {
    // A plugin refused to start (a ConfigError: a key that is not the database's, say): what the
    // plugins before it opened (the store, its worker thread, Redis) is closed, not left running.
    await app.close().catch(() => {})
    throw err
  }
  return app
}

async function registerAll(
  app: FastifyInstance,
  config: Config,
  options: BuildOptions,
  theSpec: Spec,
  policy: ReturnType<typeof securityHeaders>,
): Promise<void> {
  // Plumbing every request passes.
  await app.register(spec, { spec: theSpec })
  await app.register(validation)
  await app.register(headers, { policy })
  await app.register(connections, { config })
  await app.register(requestLog)
  await app.register(metrics)
  // A snapshot first when migrations are about to change an existing database (features/backup).
  await app.register(store, {
    config,
    unsafeNoFsync: options.unsafeNoFsync === true,
    beforeMigrating: (pending, dialect, log) => snapshotBeforeMigrating(config, log)(pending, dialect),
  })
  await app.register(rateLimit, { config })
  await app.register(errors, { apiHeaders: policy.api })
  await app.register(health)
  await app.register(cors, { config, paths: CORS_PATHS })
  await app.register(formbody)

  // Features.
  await app.register(auth, { config })
  await app.register(playbook)
  await app.register(pricing)
  await app.register(catalogue, { config })
  await app.register(leads)
  await app.register(webhooks, { config })
  await app.register(email, { config })
  await app.register(privacy, { config, ...(options.retentionEveryMs !== undefined && { everyMs: options.retentionEveryMs }) })
  await app.register(backup, { config })
  await app.register(staff, { config })

  // What the handlers and tools are given, and the plugins that bind them.
  const deps: Deps = {
    config,
    spec: app.spec,
    auth: app.auth,
    authFailures: app.authFailures,
    catalogue: app.catalogue,
    leads: app.leads,
    pricing: app.pricing,
    playbook: app.playbook,
  }
  await app.register(routes, { config, handlers: operationHandlers, deps })
  await app.register(mcp, { config, tools: TOOLS, deps })
  await app.register(docs, { config })
  await app.register(home)
}
