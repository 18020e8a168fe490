// The app factory: everything the API is, for a given configuration. server.ts only adds the
// process concerns (logger destination, signals, listen); tests build the app and inject.
import { randomUUID } from 'node:crypto'
import formbody from '@fastify/formbody'
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify'
import type { Config } from './config.js'
import { idempotencyCutoff, LeadIntake } from './handlers/leads/intake.js'
import auth from './plugins/auth/index.js'
import catalogue from './plugins/catalogue.js'
import cors from './plugins/cors.js'
import docs from './plugins/docs.js'
import errors from './plugins/errors/index.js'
import health from './plugins/health.js'
import mcp from './plugins/mcp/index.js'
import metrics from './plugins/metrics.js'
import rateLimit from './plugins/rate-limit.js'
import requestLog from './plugins/request-log.js'
import routes from './plugins/routes.js'
import { loadSpec, type OpenApiDocument } from './plugins/spec.js'
import store from './plugins/store/index.js'
import { LeadWriter } from './plugins/store/lead-writer.js'
import validation from './plugins/validation.js'

export interface BuildOptions {
  logger?: FastifyServerOptions['logger']
  /** A variant of the spec (tests); default spec/openapi.yaml. */
  spec?: OpenApiDocument
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const IDEMPOTENCY_SWEEP_MS = 60 * 60 * 1000

/**
 * The spec as this deployment serves it: with the operator's anonymous switch on, operations
 * that declare an `anonymous_max` also list the empty security requirement `{}`.
 */
export function effectiveSpec(spec: OpenApiDocument, config: Config): OpenApiDocument {
  const out = structuredClone(spec)
  out.servers = [{ url: config.publicBaseUrl }]
  const flows = (out.components.securitySchemes.OAuth2 as { flows?: { clientCredentials?: { tokenUrl: string } } })?.flows
  if (flows?.clientCredentials) flows.clientCredentials.tokenUrl = `${config.publicBaseUrl}/api/token`
  if (config.leadsAllowAnonymous) {
    for (const item of Object.values(out.paths)) {
      for (const op of Object.values(item)) {
        if (op?.['x-rate-limit']?.anonymous_max !== undefined) op.security = [...(op.security ?? []), {}]
      }
    }
  }
  return out
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
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
    // Closing is answered by plugins/health.ts with our Error shape instead.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: false },
  })

  const spec = options.spec ?? loadSpec()
  const served = effectiveSpec(spec, config)

  await app.register(validation)
  await app.register(requestLog)
  await app.register(metrics)
  await app.register(store, { config })
  await app.register(auth, { config })
  await app.register(rateLimit, { config })
  await app.register(errors, { version: spec.info.version })
  await app.register(health)
  await app.register(cors, { config })
  await app.register(formbody)
  await app.register(catalogue, { config })

  const writer = new LeadWriter(app.store.leads, idempotencyCutoff, (n) => app.metrics.leadsStored.inc(n))
  const intake = new LeadIntake(app.store.leads, writer)
  // Runs before the store plugin's onClose (hooks run in reverse): every acknowledged lead is
  // committed before the connection closes.
  app.addHook('onClose', async () => writer.flush())

  // Idempotency keys live 24 h; expired ones are swept hourly (and are ignored until then).
  const sweep = setInterval(() => {
    app.store.leads
      .sweepIdempotency(idempotencyCutoff())
      .then((n) => n > 0 && app.log.info({ removed: n }, 'expired idempotency keys swept'))
      .catch((err: Error) => app.log.warn({ err: { message: err.message } }, 'idempotency sweep failed; retrying next hour'))
  }, IDEMPOTENCY_SWEEP_MS)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))

  const deps = { config, store: app.store, auth: app.auth, catalogue: app.catalogue, intake, authFailures: app.authFailures }
  await app.register(routes, { config, spec, effectiveSpec: served, deps })
  await app.register(mcp, { config, deps })
  await app.register(docs, { spec: served })
  return app
}
