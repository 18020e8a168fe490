// Configuration: read from the environment once, validated against a schema at start-up.
// Tests build a Config with createConfig({...}) and never touch process.env.
import { isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import envSchema from 'env-schema'

/** The project root (this file sits at the root, or at dist/ once compiled). */
export const projectRoot = (() => {
  const here = fileURLToPath(new URL('.', import.meta.url))
  return here.replace(/[\\/]dist[\\/]?$/, '')
})()

export interface RateLimitOverride {
  max?: number
  window?: string
}

export interface Config {
  host: string
  port: number
  /** Folder of the embedded database, signing keys and bootstrap credentials. */
  dataDir: string
  /** The service's public host name; `{host}` of the MCP `ui://` resources. */
  publicHost: string
  /** Absolute base URL the service is reached at (issuer, token endpoint, image URLs). */
  publicBaseUrl: string
  logLevel: string
  tokenTtlSeconds: number
  /** Operator switch: accept lead submissions without a token (website form). */
  leadsAllowAnonymous: boolean
  /** Per-operation overrides of the spec's `x-rate-limit`, by operationId. */
  rateLimits: Record<string, RateLimitOverride>
  /** Ed25519 private key (PKCS#8 PEM). Absent: generated once and kept in dataDir. */
  jwtPrivateKey: string | undefined
  /** Key for the client-secret hashes. Absent: generated once and kept in dataDir. */
  secretPepper: string | undefined
  bootstrapClientId: string | undefined
  bootstrapClientSecret: string | undefined
  /** How long a client's active/revoked status is trusted before it is read again. */
  clientStatusTtlSeconds: number
  /** How often the published catalogue is re-checked for a new version. */
  catalogueRefreshSeconds: number
  trustProxy: boolean
  /** Import data/projects.json on first start when no catalogue is published. */
  seedCatalogue: boolean
  /** `postgres://…` selects PostgreSQL; absent, the embedded SQLite file in dataDir. */
  databaseUrl: string | undefined
  /** Connections per instance in the PostgreSQL pool. */
  dbPoolMax: number
  /** `redis://…`: rate-limit counters shared by every instance. */
  redisUrl: string | undefined
  /** Prefix of this deployment's Redis keys. */
  redisPrefix: string
  /** Browser origins allowed to call the API (CORS); empty: CORS off. */
  corsOrigins: string[]
}

const schema = {
  type: 'object',
  properties: {
    HOST: { type: 'string', default: '0.0.0.0', minLength: 1 },
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    DATA_DIR: { type: 'string', default: 'var', minLength: 1 },
    PUBLIC_HOST: { type: 'string', pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$', default: 'localhost' },
    PUBLIC_BASE_URL: { type: 'string', pattern: '^https?://[^/]+' },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    TOKEN_TTL_SECONDS: { type: 'integer', minimum: 60, maximum: 86400, default: 3600 },
    LEADS_ALLOW_ANONYMOUS: { type: 'boolean', default: false },
    RATE_LIMITS: { type: 'string', default: '' },
    JWT_PRIVATE_KEY: { type: 'string', minLength: 1 },
    SECRET_PEPPER: { type: 'string', minLength: 32 },
    BOOTSTRAP_CLIENT_ID: { type: 'string', pattern: '^[A-Za-z0-9._-]{3,64}$' },
    BOOTSTRAP_CLIENT_SECRET: { type: 'string', minLength: 32 },
    CLIENT_STATUS_TTL_SECONDS: { type: 'integer', minimum: 1, maximum: 60, default: 30 },
    CATALOGUE_REFRESH_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 10 },
    TRUST_PROXY: { type: 'boolean', default: false },
    SEED_CATALOGUE: { type: 'boolean', default: true },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://' },
    DB_POOL_MAX: { type: 'integer', minimum: 1, maximum: 200, default: 10 },
    REDIS_URL: { type: 'string', pattern: '^rediss?://' },
    REDIS_PREFIX: { type: 'string', pattern: '^[A-Za-z0-9:_-]{1,64}$', default: 'studio-api:' },
    CORS_ORIGINS: { type: 'string', pattern: '^(|https?://[^/,\\s]+(\\s*,\\s*https?://[^/,\\s]+)*)$', default: '' },
  },
  dependencies: {
    BOOTSTRAP_CLIENT_ID: ['BOOTSTRAP_CLIENT_SECRET'],
    BOOTSTRAP_CLIENT_SECRET: ['BOOTSTRAP_CLIENT_ID'],
  },
} as const

/** Thrown with a message that names the bad variable. */
export class ConfigError extends Error {}

interface Env {
  HOST: string
  PORT: number
  DATA_DIR: string
  PUBLIC_HOST: string
  PUBLIC_BASE_URL?: string
  LOG_LEVEL: string
  TOKEN_TTL_SECONDS: number
  LEADS_ALLOW_ANONYMOUS: boolean
  RATE_LIMITS: string
  JWT_PRIVATE_KEY?: string
  SECRET_PEPPER?: string
  BOOTSTRAP_CLIENT_ID?: string
  BOOTSTRAP_CLIENT_SECRET?: string
  CLIENT_STATUS_TTL_SECONDS: number
  CATALOGUE_REFRESH_SECONDS: number
  TRUST_PROXY: boolean
  SEED_CATALOGUE: boolean
  DATABASE_URL?: string
  DB_POOL_MAX: number
  REDIS_URL?: string
  REDIS_PREFIX: string
  CORS_ORIGINS: string
}

/**
 * `RATE_LIMITS="getProjects=1200/1 minute, submitLead=100"`: per operationId, a max and
 * optionally a window (anything @fastify/rate-limit understands, e.g. `30 seconds`).
 */
export function parseRateLimits(text: string): Record<string, RateLimitOverride> {
  const out: Record<string, RateLimitOverride> = {}
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z]+)\s*=\s*(\d+)\s*(?:\/\s*(.+))?$/.exec(part)
    if (!m?.[1] || !m[2]) {
      throw new ConfigError(
        `RATE_LIMITS: cannot read "${part}"; write operationId=max or operationId=max/window, e.g. getProjects=1200/1 minute`,
      )
    }
    out[m[1]] = m[3] ? { max: Number(m[2]), window: m[3].trim() } : { max: Number(m[2]) }
  }
  return out
}

/** What a variable checked by a pattern should look like, in words. */
const expected: Record<string, string> = {
  PUBLIC_HOST: 'a host name, optionally with a port, such as api.studio.example',
  PUBLIC_BASE_URL: 'an absolute http(s) URL such as https://api.studio.example',
  BOOTSTRAP_CLIENT_ID: '3 to 64 letters, digits, dots, dashes or underscores',
  DATABASE_URL: 'a PostgreSQL URL such as postgres://user:password@host:5432/studio',
  REDIS_URL: 'a Redis URL such as redis://host:6379',
  REDIS_PREFIX: '1 to 64 letters, digits, colons, dashes or underscores',
  CORS_ORIGINS: 'comma-separated origins such as https://studio.example,https://www.studio.example',
}

function ajvMessage(err: unknown): string {
  const e = err as { errors?: { instancePath: string; keyword?: string; message?: string; params?: Record<string, unknown> }[] }
  const first = e.errors?.[0]
  if (!first) return String((err as Error).message)
  const name = first.instancePath.replace(/^\//, '') || String(first.params?.missingProperty ?? '')
  if (first.keyword === 'pattern' && expected[name]) return `${name} must be ${expected[name]}`
  return `${name} ${first.message ?? 'is invalid'}`
}

/** Reads and validates the environment; throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let raw: Env
  try {
    // env: false: read only the given environment (env-schema merges process.env in by default).
    raw = envSchema<Env>({ schema, data: env, env: false, dotenv: false })
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${ajvMessage(err)}`)
  }
  const port = raw.PORT
  return createConfig({
    host: raw.HOST,
    port,
    dataDir: raw.DATA_DIR,
    publicHost: raw.PUBLIC_HOST,
    publicBaseUrl: raw.PUBLIC_BASE_URL || `http://${raw.PUBLIC_HOST}${raw.PUBLIC_HOST.includes(':') ? '' : `:${port}`}`,
    logLevel: raw.LOG_LEVEL,
    tokenTtlSeconds: raw.TOKEN_TTL_SECONDS,
    leadsAllowAnonymous: raw.LEADS_ALLOW_ANONYMOUS,
    rateLimits: parseRateLimits(raw.RATE_LIMITS),
    jwtPrivateKey: raw.JWT_PRIVATE_KEY,
    secretPepper: raw.SECRET_PEPPER,
    bootstrapClientId: raw.BOOTSTRAP_CLIENT_ID,
    bootstrapClientSecret: raw.BOOTSTRAP_CLIENT_SECRET,
    clientStatusTtlSeconds: raw.CLIENT_STATUS_TTL_SECONDS,
    catalogueRefreshSeconds: raw.CATALOGUE_REFRESH_SECONDS,
    trustProxy: raw.TRUST_PROXY,
    seedCatalogue: raw.SEED_CATALOGUE,
    databaseUrl: raw.DATABASE_URL,
    dbPoolMax: raw.DB_POOL_MAX,
    redisUrl: raw.REDIS_URL,
    redisPrefix: raw.REDIS_PREFIX,
    corsOrigins: raw.CORS_ORIGINS.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  })
}

/** A full Config from defaults and the given overrides (tests and scripts). */
export function createConfig(partial: Partial<Config> = {}): Config {
  const port = partial.port ?? 3000
  const publicHost = partial.publicHost ?? 'localhost'
  const config: Config = {
    host: '127.0.0.1',
    port,
    dataDir: 'var',
    publicHost,
    publicBaseUrl: `http://${publicHost}:${port}`,
    logLevel: 'info',
    tokenTtlSeconds: 3600,
    leadsAllowAnonymous: false,
    rateLimits: {},
    jwtPrivateKey: undefined,
    secretPepper: undefined,
    bootstrapClientId: undefined,
    bootstrapClientSecret: undefined,
    clientStatusTtlSeconds: 30,
    catalogueRefreshSeconds: 10,
    trustProxy: false,
    seedCatalogue: true,
    databaseUrl: undefined,
    dbPoolMax: 10,
    redisUrl: undefined,
    redisPrefix: 'studio-api:',
    corsOrigins: [],
    ...partial,
  }
  config.dataDir = isAbsolute(config.dataDir) ? config.dataDir : resolve(projectRoot, config.dataDir)
  config.publicBaseUrl = config.publicBaseUrl.replace(/\/+$/, '')
  return config
}
