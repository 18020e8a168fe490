// Configuration: one table. Each variable is declared once (environment name, JSON Schema of its
// text, default, meaning); the typed Config, the validation at start-up, createConfig's defaults
// for tests and the README's configuration table (`npm run docs:config`) all come from it.
// The environment is read once, by loadConfig; tests build a Config with createConfig({...}).
import { availableParallelism } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compileText, type ValidateFunction } from './plugins/validation/ajv.js'

/** The project root (this file sits at the root, or at dist/ once compiled). */
export const projectRoot = (() => {
  const here = fileURLToPath(new URL('.', import.meta.url))
  return here.replace(/[\\/]dist[\\/]?$/, '')
})()

export interface RateLimitOverride {
  max?: number
  window?: string
}

/** One environment variable: how it is written, checked, defaulted and documented. */
interface Variable<T> {
  readonly env: string
  /** JSON Schema of the value as written in the environment (numbers and booleans are coerced from the text). */
  readonly schema: Record<string, unknown>
  readonly default: T
  /** The default as the README shows it (when it is derived, or not a plain value). */
  readonly shown?: string
  readonly doc: string
  /** What a pattern-checked value should look like, in words (for error messages). */
  readonly expected?: string
  /** Never echo the value in an error message. */
  readonly secret?: boolean
  /** From the validated text to the typed value. */
  readonly parse?: (raw: never) => T
}

type Opt<T> = Omit<Variable<T>, 'env' | 'schema' | 'default' | 'doc'>

function string<D extends string | undefined>(
  env: string,
  doc: string,
  opts: Opt<D> & { default: D; pattern?: string; minLength?: number },
): Variable<D extends undefined ? string | undefined : string> {
  const { pattern, minLength, ...rest } = opts
  return { env, doc, schema: { type: 'string', ...(pattern && { pattern }), ...(minLength && { minLength }) }, ...rest } as never
}

function oneOf<const V extends readonly string[]>(env: string, doc: string, values: V, dflt: V[number]): Variable<V[number]> {
  return { env, doc, schema: { type: 'string', enum: values }, default: dflt }
}

function integer(env: string, doc: string, opts: Opt<number> & { default: number; minimum: number; maximum: number }): Variable<number> {
  const { minimum, maximum, ...rest } = opts
  return { env, doc, schema: { type: 'integer', minimum, maximum }, ...rest }
}

function boolean(env: string, doc: string, dflt: boolean): Variable<boolean> {
  return { env, doc, schema: { type: 'boolean' }, default: dflt }
}

function parsed<T>(env: string, doc: string, opts: Opt<T> & { default: T; pattern?: string; parse: (raw: string) => T }): Variable<T> {
  const { pattern, ...rest } = opts
  return { env, doc, schema: { type: 'string', ...(pattern && { pattern }) }, ...rest } as Variable<T>
}

/** Thrown with a message that names the bad variable. */
export class ConfigError extends Error {}

/**
 * `RATE_LIMITS="getProjects=1200/1 minute, submitLead=100"`: per budget (an operationId, or another
 * name listed in the README), a max and optionally a window (`30 seconds`, `1 minute`, `1 hour`).
 * Whether each name exists is checked against the spec when the app is built.
 */
export function parseRateLimits(text: string): Record<string, RateLimitOverride> {
  const out: Record<string, RateLimitOverride> = {}
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z]+)\s*=\s*(\d+)\s*(?:\/\s*(.+))?$/.exec(part)
    if (!m?.[1] || !m[2]) {
      throw new ConfigError(`RATE_LIMITS: cannot read "${part}"; write name=max or name=max/window, e.g. getProjects=1200/1 minute`)
    }
    out[m[1]] = m[3] ? { max: Number(m[2]), window: m[3].trim() } : { max: Number(m[2]) }
  }
  return out
}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** Every setting, in the order the README lists them. */
export const VARIABLES = {
  port: integer('PORT', 'port to listen on', { default: 3000, minimum: 0, maximum: 65535 }),
  host: string('HOST', 'interface to listen on (`127.0.0.1` to accept local connections only)', {
    default: '0.0.0.0',
    minLength: 1,
  }),
  metricsPort: integer('METRICS_PORT', 'port of the Prometheus `/metrics` listener, apart from the API; 0 turns it off', {
    default: 9464,
    minimum: 0,
    maximum: 65535,
  }),
  metricsHost: string('METRICS_HOST', 'interface of the `/metrics` listener (only your scraper should reach it)', {
    default: '127.0.0.1',
    minLength: 1,
  }),
  dataDir: string('DATA_DIR', 'data folder: SQLite database, signing key, bootstrap credentials (relative to the project)', {
    default: 'var',
    minLength: 1,
  }),
  publicHost: string('PUBLIC_HOST', 'public host name; `{host}` of the `ui://` resources', {
    default: 'localhost',
    pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$',
    expected: 'a host name, optionally with a port, such as api.studio.example',
  }),
  // Empty means derived from PUBLIC_HOST and PORT (createConfig fills it in).
  publicBaseUrl: string('PUBLIC_BASE_URL', 'absolute base URL: token issuer and audience, image URLs, `Link` headers', {
    default: '',
    shown: '`http://{PUBLIC_HOST}:{PORT}`',
    pattern: '^https?://[^/]+',
    expected: 'an absolute http(s) URL such as https://api.studio.example',
  }),
  logLevel: oneOf('LOG_LEVEL', 'log level', LOG_LEVELS, 'info'),
  tokenTtlSeconds: integer('TOKEN_TTL_SECONDS', 'access token lifetime in seconds', { default: 3600, minimum: 60, maximum: 86400 }),
  leadsAllowAnonymous: boolean('LEADS_ALLOW_ANONYMOUS', 'accept leads without a token (website form)', false),
  mcpAnonymousConsultations: boolean(
    'MCP_ANONYMOUS_CONSULTATIONS',
    'agents may call `request_consultation` without a token (with the person’s consent, per-address limit); `false`: it needs `write:leads`',
    true,
  ),
  rateLimits: parsed('RATE_LIMITS', 'per-budget overrides of the rate limits, see [Rate limits](#rate-limits)', {
    default: {} as Record<string, RateLimitOverride>,
    shown: '(spec)',
    parse: parseRateLimits,
  }),
  jwtPrivateKey: string('JWT_PRIVATE_KEY', 'Ed25519 private key (PKCS#8 PEM) that signs tokens; share it between instances', {
    default: undefined,
    shown: 'generated in `DATA_DIR/keys`',
    minLength: 1,
    secret: true,
  }),
  secretPepper: string('SECRET_PEPPER', 'key of the client-secret hashes (at least 32 characters); share it between instances', {
    default: undefined,
    shown: 'generated in `DATA_DIR/keys`',
    minLength: 32,
    secret: true,
  }),
  bootstrapClientId: string(
    'BOOTSTRAP_CLIENT_ID',
    'with `BOOTSTRAP_CLIENT_SECRET`: create this client (all scopes) on start instead of writing `bootstrap-client.json`',
    {
      default: undefined,
      shown: '–',
      pattern: '^[A-Za-z0-9._-]{3,64}$',
      expected: '3 to 64 letters, digits, dots, dashes or underscores',
    },
  ),
  bootstrapClientSecret: string('BOOTSTRAP_CLIENT_SECRET', 'the bootstrap client’s secret (at least 32 characters)', {
    default: undefined,
    shown: '–',
    minLength: 32,
    secret: true,
  }),
  clientStatusTtlSeconds: integer(
    'CLIENT_STATUS_TTL_SECONDS',
    'how long a client’s active/revoked status is cached: revocation takes effect within it',
    {
      default: 30,
      minimum: 1,
      maximum: 60,
    },
  ),
  catalogueRefreshSeconds: integer('CATALOGUE_REFRESH_SECONDS', 'how often a newly published catalogue is picked up', {
    default: 10,
    minimum: 1,
    maximum: 3600,
  }),
  enquiryContact: string(
    'ENQUIRY_CONTACT',
    'how to reach the studio, shown on the project pages when website enquiries are off (`LEADS_ALLOW_ANONYMOUS=false`)',
    {
      default: 'Write to the studio to arrange a consultation: we answer within two working days.',
      minLength: 1,
    },
  ),
  seedCatalogue: boolean('SEED_CATALOGUE', 'import `data/projects.json` on first start when nothing is published', true),
  trustProxy: boolean('TRUST_PROXY', 'trust `X-Forwarded-*` (behind a load balancer)', false),
  // Timeouts (see README "Security"): a client that sends slowly cannot hold a connection open.
  requestTimeoutSeconds: integer(
    'REQUEST_TIMEOUT_SECONDS',
    'a request (headers and body) must arrive within this; a slower one gets 408 and its connection is closed',
    { default: 30, minimum: 1, maximum: 300 },
  ),
  headersTimeoutSeconds: integer(
    'HEADERS_TIMEOUT_SECONDS',
    'a request’s headers must arrive within this (at most `REQUEST_TIMEOUT_SECONDS`)',
    { default: 10, minimum: 1, maximum: 300 },
  ),
  keepAliveTimeoutSeconds: integer(
    'KEEP_ALIVE_TIMEOUT_SECONDS',
    'an idle keep-alive connection is closed after this; keep it above your load balancer’s idle timeout',
    { default: 72, minimum: 1, maximum: 600 },
  ),
  connectionTimeoutSeconds: integer(
    'CONNECTION_TIMEOUT_SECONDS',
    'a connection with a request in progress on which nothing is sent or read for this long is closed (e.g. a client that stops reading a response)',
    { default: 60, minimum: 1, maximum: 600 },
  ),
  corsOrigins: parsed(
    'CORS_ORIGINS',
    'browser origins allowed to call the API and `/mcp` (which refuses every other browser origin but its own), comma-separated, e.g. `https://studio.example`',
    {
      default: [] as string[],
      shown: '– (CORS off)',
      pattern: '^(|https?://[^/,\\s]+(\\s*,\\s*https?://[^/,\\s]+)*)$',
      expected: 'comma-separated origins such as https://studio.example,https://www.studio.example',
      parse: list,
    },
  ),
  databaseUrl: string('DATABASE_URL', '`postgres://…`: use PostgreSQL (see [Scaling out](#scaling-out))', {
    default: undefined,
    shown: '– (SQLite)',
    pattern: '^postgres(ql)?://',
    expected: 'a PostgreSQL URL such as postgres://user:password@host:5432/studio',
    secret: true,
  }),
  dbPoolMax: integer('DB_POOL_MAX', 'PostgreSQL connections per instance', { default: 10, minimum: 1, maximum: 200 }),
  redisUrl: string('REDIS_URL', '`redis://…`: rate-limit counters shared by every instance', {
    default: undefined,
    shown: '– (in memory)',
    pattern: '^rediss?://',
    expected: 'a Redis URL such as redis://host:6379',
    secret: true,
  }),
  redisPrefix: string('REDIS_PREFIX', 'prefix of this deployment’s Redis keys', {
    default: 'studio-api:',
    pattern: '^[A-Za-z0-9:_-]{1,64}$',
    expected: '1 to 64 letters, digits, colons, dashes or underscores',
  }),
  webhooksAllowPrivate: boolean(
    'WEBHOOKS_ALLOW_PRIVATE',
    'let webhook endpoints be `http://` URLs and private, loopback or link-local addresses (tests; a receiver inside your own network)',
    false,
  ),
  webhooksFirstRetryMs: integer(
    'WEBHOOKS_FIRST_RETRY_MS',
    'delay before a failed webhook delivery’s first retry, in ms; each further retry waits 3 times longer (±20 %), see [Receiving leads](#receiving-leads)',
    { default: 10_000, minimum: 10, maximum: 3_600_000 },
  ),
  webhooksMaxAttempts: integer('WEBHOOKS_MAX_ATTEMPTS', 'delivery attempts of an event to an endpoint before it is kept as a dead letter', {
    default: 10,
    minimum: 1,
    maximum: 20,
  }),
  // 0 means one per CPU (resolved by the cluster script, which is its only reader).
  clusterWorkers: integer('CLUSTER_WORKERS', 'instances started by `npm run cluster`', {
    default: 0,
    shown: 'number of CPUs',
    minimum: 0,
    maximum: 64,
  }),
}

type ValueOf<V> = V extends Variable<infer T> ? T : never
export type Config = { -readonly [K in keyof typeof VARIABLES]: ValueOf<(typeof VARIABLES)[K]> }
type Key = keyof typeof VARIABLES

const entries = Object.entries(VARIABLES) as [Key, Variable<unknown>][]

/** Variables that must be given together. */
const TOGETHER: [string, string][] = [['BOOTSTRAP_CLIENT_ID', 'BOOTSTRAP_CLIENT_SECRET']]

const envJsonSchema = {
  type: 'object',
  properties: Object.fromEntries(entries.map(([, v]) => [v.env, v.schema])),
  dependentRequired: Object.fromEntries(
    TOGETHER.flatMap(([a, b]) => [
      [a, [b]],
      [b, [a]],
    ]),
  ),
}

/** Compiled on first use, with the app's one validator (text mode: values are coerced from strings). */
let validateEnv: ValidateFunction | undefined

interface AjvIssue {
  instancePath: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
}

/** A sentence naming the variable, what it must be and (unless secret) what it was. */
function explain(err: unknown, env: NodeJS.ProcessEnv): string {
  const first = (err as { errors?: AjvIssue[] }).errors?.[0]
  if (!first) return String((err as Error).message)
  const name = first.instancePath.replace(/^\//, '') || String(first.params?.missingProperty ?? '')
  const variable = entries.find(([, v]) => v.env === name)?.[1]
  const schema = (variable?.schema ?? {}) as { enum?: string[]; minimum?: number; maximum?: number; minLength?: number }
  let must: string
  switch (first.keyword) {
    case 'enum':
      must = `must be one of: ${schema.enum?.join(', ')}`
      break
    case 'pattern':
      must = `must be ${variable?.expected ?? `in the form ${String(first.params?.pattern)}`}`
      break
    case 'type':
    case 'minimum':
    case 'maximum':
      must =
        schema.minimum !== undefined
          ? `must be a whole number from ${schema.minimum} to ${schema.maximum}`
          : first.params?.type === 'boolean'
            ? 'must be true or false'
            : `${first.message ?? 'is invalid'}`
      break
    case 'minLength':
      must = `must be at least ${schema.minLength} characters long`
      break
    case 'required':
    case 'dependentRequired':
      must = `is required when ${TOGETHER.find((pair) => pair.includes(name))?.find((n) => n !== name) ?? 'a related variable'} is set`
      break
    default:
      must = first.message ?? 'is invalid'
  }
  const given = env[name]
  const shown = variable?.secret || given === undefined ? '' : ` (got ${JSON.stringify(given)})`
  return `${name} ${must}${shown}`
}

/** Reads and validates the environment once; throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A copy: validation coerces values and fills defaults in place.
  const raw: Record<string, unknown> = { ...env }
  validateEnv ??= compileText(envJsonSchema)
  if (!validateEnv(raw)) {
    throw new ConfigError(`Invalid configuration: ${explain({ errors: validateEnv.errors }, env)}`)
  }
  const given: Partial<Record<Key, unknown>> = {}
  for (const [key, v] of entries) {
    const value = raw[v.env]
    if (value === undefined) continue
    given[key] = v.parse ? (v.parse as (r: unknown) => unknown)(value) : value
  }
  const config = createConfig(given as Partial<Config>)
  if (config.headersTimeoutSeconds > config.requestTimeoutSeconds) {
    throw new ConfigError(
      `Invalid configuration: HEADERS_TIMEOUT_SECONDS (${config.headersTimeoutSeconds}) must not exceed REQUEST_TIMEOUT_SECONDS (${config.requestTimeoutSeconds})`,
    )
  }
  return config
}

/** A full Config from the table's defaults and the given values (tests and scripts). */
export function createConfig(partial: Partial<Config> = {}): Config {
  const config = Object.fromEntries(entries.map(([key, v]) => [key, structuredClone(v.default)])) as Config
  Object.assign(config, partial)
  config.dataDir = isAbsolute(config.dataDir) ? config.dataDir : resolve(projectRoot, config.dataDir)
  const host = config.publicHost
  config.publicBaseUrl = (config.publicBaseUrl || `http://${host}${host.includes(':') ? '' : `:${config.port}`}`).replace(/\/+$/, '')
  if (config.clusterWorkers === 0) config.clusterWorkers = availableParallelism()
  return config
}

/** The README's configuration table, rendered from VARIABLES (`npm run docs:config` writes it). */
export function configTable(): string {
  const rows = entries.map(([, v]) => {
    const schema = v.schema as { enum?: string[]; minimum?: number; maximum?: number }
    const shownDefault = v.shown ?? (v.default === undefined ? '–' : `\`${String(v.default)}\``)
    const range =
      schema.enum !== undefined
        ? `: ${schema.enum.map((e) => `\`${e}\``).join(', ')}`
        : schema.minimum !== undefined
          ? ` (${schema.minimum}–${schema.maximum})`
          : ''
    return `| \`${v.env}\` | ${shownDefault} | ${v.doc}${range} |`
  })
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n')
}

/** Where the README's configuration table starts and ends. */
export const CONFIG_TABLE_MARKERS = {
  start: '<!-- config-table: generated by `npm run docs:config` from config.ts; do not edit by hand -->',
  end: '<!-- /config-table -->',
} as const

/** The README with its configuration table replaced by the one configTable() renders. */
export function withConfigTable(readme: string): string {
  const { start, end } = CONFIG_TABLE_MARKERS
  const a = readme.indexOf(start)
  const b = readme.indexOf(end)
  if (a < 0 || b < a) throw new Error(`README.md has no configuration table markers (${start} … ${end})`)
  return `${readme.slice(0, a + start.length)}\n${configTable()}\n${readme.slice(b)}`
}
