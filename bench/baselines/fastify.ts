// Baseline for getProjects: the route as a competent team would hand-wire it in plain Fastify 5,
// without this project's design (no spec-driven routing, no pre-serialized catalogue, no
// one-line request log):
//   - @fastify/jwt verifies the API's own access tokens: EdDSA (Ed25519) with the API's public
//     key, iss and aud checked against the API's base URL, the read:projects scope required;
//     fast-jwt's verified-token cache is on (one option; without it an Ed25519 verification per
//     request dominates the route and the baseline would flatter the API);
//   - @fastify/rate-limit, global, keyed by address (its default), with a max no run reaches;
//   - a response schema, so Fastify serializes the parsed catalogue with fast-json-stringify on
//     every request;
//   - pino at info to a file, Fastify's defaults (its request logging: two lines per request).
// It serves the catalogue the API serves (CATALOGUE_FILE, written by the default run from the API's
// own 200 body) and verifies with the key the API publishes (JWKS_FILE, its /.well-known/jwks.json).
//
//   PORT=4003 CATALOGUE_FILE=/tmp/catalogue.json JWKS_FILE=/tmp/jwks.json ISSUER=http://localhost:3000 \
//     LOG_FILE=/tmp/baseline-fastify.log node --import tsx bench/baselines/fastify.ts
import { createPublicKey, type JsonWebKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import fastifyJwt from '@fastify/jwt'
import rateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'

function need(name: string): string {
  const v = process.env[name]
  if (!v) {
    process.stderr.write(`baseline-fastify: set ${name} (see the top of bench/baselines/fastify.ts)\n`)
    process.exit(2)
  }
  return v
}
const port = Number(process.env.PORT ?? 4003)
const catalogue = JSON.parse(readFileSync(need('CATALOGUE_FILE'), 'utf8')) as unknown[]
const jwks = JSON.parse(readFileSync(need('JWKS_FILE'), 'utf8')) as { keys: JsonWebKey[] }
const issuer = need('ISSUER')
const logFile = need('LOG_FILE')
const jwk = jwks.keys.find((k) => k.kty === 'OKP' && k.crv === 'Ed25519')
if (!jwk) {
  process.stderr.write('baseline-fastify: the JWKS has no Ed25519 key\n')
  process.exit(2)
}
const publicPem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()

const string = { type: 'string' } as const
const projectSchema = {
  type: 'object',
  required: ['id', 'title', 'designer', 'styles', 'location', 'year', 'area_sqm', 'summary', 'tags', 'images'],
  properties: {
    id: string,
    title: string,
    designer: string,
    styles: { type: 'array', items: string },
    location: {
      type: 'object',
      required: ['city', 'country'],
      properties: { city: string, region: string, country: string },
    },
    year: { type: 'integer' },
    area_sqm: { type: 'number' },
    summary: string,
    tags: { type: 'array', items: string },
    images: {
      type: 'array',
      items: { type: 'object', required: ['url', 'alt'], properties: { url: string, alt: string } },
    },
  },
} as const

const errorSchema = { type: 'object', properties: { error: string } } as const

const app = Fastify({ logger: { level: 'info', file: logFile } })

await app.register(fastifyJwt, {
  secret: { public: publicPem },
  // cache: fast-jwt's verified-token cache at its default size: clients reuse a token for its hour.
  verify: { algorithms: ['EdDSA'], allowedIss: issuer, allowedAud: issuer, cache: true },
})
await app.register(rateLimit, { global: true, max: 1_000_000_000, timeWindow: '1 minute' })

app.get(
  '/project_metadata.json',
  {
    onRequest: async (request, reply) => {
      try {
        await request.jwtVerify()
      } catch {
        return reply.code(401).send({ error: 'unauthorized' })
      }
      const scope = (request.user as { scope?: unknown }).scope
      if (typeof scope !== 'string' || !scope.split(' ').includes('read:projects')) {
        return reply.code(403).send({ error: 'insufficient_scope' })
      }
    },
    schema: { response: { 200: { type: 'array', items: projectSchema }, 401: errorSchema, 403: errorSchema } },
  },
  async () => catalogue,
)

await app.listen({ host: '127.0.0.1', port })
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0))
})
