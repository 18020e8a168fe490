// Configuration: one table. Each variable is declared once (environment name, JSON Schema of its
// text, default, meaning); the typed Config, the validation at start-up, createConfig's defaults
// for tests and the README's configuration table (`npm run docs:config`) all come from it.
// The environment is read once, by loadConfig; tests build a Config with createConfig({...}).
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compileText, type ValidateFunction } from './lib/ajv.js'
import { EMAIL, list, parseRateLimits, parseTimeZone, parseTrustProxy, type RateLimitOverride } from './lib/config-values.js'
import { overlap } from './lib/real-path.js'
import { boolean, ConfigError, decimal, integer, oneOf, parsed, string, type ValueOf, type Variable } from './lib/settings.js'
import { checkedSmtpUrl } from './lib/smtp-url.js'

export { MAX_RATE_LIMIT, parseRateLimits, parseTrustProxy, type RateLimitOverride, TRUST_PROXY_EXAMPLE } from './lib/config-values.js'
export { ConfigError } from './lib/settings.js'

/** The project root (this file sits at the root, or at dist/ once compiled, or dist/tests in the tests' bundles). */
export const projectRoot = (() => {
  const here = fileURLToPath(new URL('.', import.meta.url))
  return here.replace(/[\\/]dist(?:[\\/]tests)?[\\/]?$/, '')
})()

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
  dataDir: string(
    'DATA_DIR',
    'data folder: SQLite database, signing key, bootstrap credentials (relative to the project); made (0700) if missing, and a folder that cannot be made is refused at start (exit 78, naming it)',
    {
      default: 'var',
      minLength: 1,
    },
  ),
  backupDir: string(
    'BACKUP_DIR',
    'folder of the server’s scheduled backups (and of the snapshot taken before a migration), outside `DATA_DIR`; unset: no scheduled backups (see [Backups](backups.md)); one that cannot be made or written is a warn line and `studio_backup_failures_total` at each attempt, and the server serves on',
    { default: undefined, shown: '– (off)', minLength: 1 },
  ),
  backupIntervalMinutes: decimal('BACKUP_INTERVAL_MINUTES', 'minutes between scheduled backups; fractions allowed (`0.5` is 30 s)', {
    default: 60,
    minimum: 0.01,
    maximum: 10_080,
  }),
  backupKeep: integer('BACKUP_KEEP', 'scheduled backups kept in `BACKUP_DIR`: the oldest beyond this are removed', {
    default: 24,
    minimum: 1,
    maximum: 10_000,
  }),
  publicHost: string('PUBLIC_HOST', 'public host name; `{host}` of the `ui://` resources', {
    default: 'localhost',
    pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$',
    expected: 'a host name, optionally with a port, such as api.studio.example',
  }),
  // Empty means derived from PUBLIC_HOST and PORT (createConfig fills it in).
  publicBaseUrl: string(
    'PUBLIC_BASE_URL',
    'absolute base URL: token issuer and audience, image URLs, `Link` headers; the same on every instance of one database',
    {
      default: '',
      shown: '`http://{PUBLIC_HOST}:{PORT}`',
      pattern: '^https?://[^/]+',
      expected: 'an absolute http(s) URL such as https://api.studio.example',
    },
  ),
  logLevel: oneOf('LOG_LEVEL', 'log level', LOG_LEVELS, 'info'),
  tokenTtlSeconds: integer('TOKEN_TTL_SECONDS', 'access token lifetime in seconds', { default: 3600, minimum: 60, maximum: 86400 }),
  leadsAllowAnonymous: boolean('LEADS_ALLOW_ANONYMOUS', 'accept leads without a token (website form)', false),
  mcpAnonymousConsultations: boolean(
    'MCP_ANONYMOUS_CONSULTATIONS',
    'agents may call `request_consultation` without a token (with the person’s consent, per-address limit); `false`: it needs `write:leads`',
    true,
  ),
  rateLimits: parsed('RATE_LIMITS', 'per-budget overrides of the rate limits, see [Rate limits](rate-limits.md)', {
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
  bootstrapClientSecret: string('BOOTSTRAP_CLIENT_SECRET', 'the bootstrap client’s secret (32 to 256 characters)', {
    default: undefined,
    shown: '–',
    minLength: 32,
    // The spec's TokenRequest.client_secret bound (client_secret_post).
    maxLength: 256,
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
    'how to reach the studio (an email, a phone number or an address), shown on the project pages when website enquiries are off (`LEADS_ALLOW_ANONYMOUS=false`); without one the server warns at start',
    {
      // Says what to configure (a warning at start too, features/catalogue/contact.ts) rather
      // than invent a way to write to a studio that has none.
      default:
        'Contact details are not configured yet: the operator sets them with ENQUIRY_CONTACT (an email, a phone number or an address).',
      minLength: 1,
    },
  ),
  seedCatalogue: boolean('SEED_CATALOGUE', 'import `data/projects.json` on first start when nothing is published', true),
  trustProxy: parsed(
    'TRUST_PROXY',
    "behind a load balancer: its addresses or CIDR ranges, comma-separated (e.g. `10.0.0.0/8,192.168.1.5`; also `loopback`, `linklocal`, `uniquelocal`). The client's address is the rightmost `X-Forwarded-For` hop not in the list; `X-Forwarded-Proto` and `-Host` count only from them. `false`: `X-Forwarded-*` is ignored. `true`, hop counts and ranges covering every address are refused, see [Security](security.md)",
    { default: false as false | string[], parse: parseTrustProxy },
  ),
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
  databaseUrl: string('DATABASE_URL', '`postgres://…`: use PostgreSQL (see [Scaling out](scaling-out.md))', {
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
  redisWaitMs: integer(
    'REDIS_WAIT_MS',
    'longest a request waits for Redis to count it (only requests of the security budgets, and requests of a caller whose share on this instance is spent, wait); past it, the request is counted by this instance alone, see [Scaling out](scaling-out.md)',
    { default: 20, minimum: 1, maximum: 5000 },
  ),
  // Lead delivery (see README "Receiving leads"): email to the studio, then webhooks; one outbox.
  smtpUrl: string('SMTP_URL', '`smtp[s]://[user:pass@]host:port`: email every lead; TLS for a password, [more](receiving-leads.md)', {
    default: undefined,
    shown: '– (no email)',
    pattern: '^smtps?://[^\\s/?#]+([/?][^\\s]*)?$',
    expected: 'an SMTP URL such as smtp://user:password@mail.example:587 or smtps://mail.example:465',
    secret: true,
    parse: checkedSmtpUrl,
  }),
  leadEmailTo: parsed('LEAD_EMAIL_TO', 'who receives the lead emails: one address or several, comma-separated', {
    default: [] as string[],
    shown: '–',
    pattern: `^\\s*${EMAIL}(\\s*,\\s*${EMAIL})*\\s*$`,
    expected: 'one or more email addresses, comma-separated, such as studio@example.com',
    parse: list,
  }),
  leadEmailFrom: string(
    'LEAD_EMAIL_FROM',
    'the lead emails’ sender (`Name <address>` or an address; your SMTP server may require its own)',
    {
      default: '',
      shown: '`Studio API <leads@{PUBLIC_HOST}>`',
      pattern: `^(|${EMAIL}|[^<>\\r\\n]*<${EMAIL}>)$`,
      expected: 'an email address, or Name <address>',
    },
  ),
  studioTimeZone: parsed(
    'STUDIO_TIME_ZONE',
    'the studio’s time zone (an IANA name such as `Europe/Rome`): the lead emails give times in it',
    { default: 'UTC', parse: parseTimeZone },
  ),
  webhooksAllowPrivate: boolean(
    'WEBHOOKS_ALLOW_PRIVATE',
    'let webhook endpoints be `http://` URLs and private, loopback or link-local addresses (tests; a receiver inside your own network); the server and `npm run webhooks` both need it',
    false,
  ),
  webhooksFirstRetryMs: integer(
    'WEBHOOKS_FIRST_RETRY_MS',
    'delay before a failed webhook delivery’s first retry, in ms; each further retry waits 3 times longer (±20 %), see [Receiving leads](receiving-leads.md)',
    { default: 10_000, minimum: 10, maximum: 3_600_000 },
  ),
  webhooksMaxAttempts: integer(
    'WEBHOOKS_MAX_ATTEMPTS',
    'delivery attempts of an event to an endpoint (or of a lead email) before it is kept as a dead letter',
    { default: 10, minimum: 1, maximum: 20 },
  ),
  webhooksTimeoutSeconds: integer('WEBHOOKS_TIMEOUT_SECONDS', 'time limit of one delivery attempt (a webhook POST, an email)', {
    default: 10,
    minimum: 1,
    maximum: 120,
  }),
  leadsRetentionDays: integer(
    'LEADS_RETENTION_DAYS',
    'leads received longer ago than this are erased like `npm run leads -- erase` does (checked at start and hourly), see [Personal data](personal-data.md); 0 keeps them forever',
    { default: 730, minimum: 0, maximum: 36500 },
  ),
  webhookPayloadRetentionDays: integer(
    'WEBHOOK_PAYLOAD_RETENTION_DAYS',
    'outbox events (the copies of leads sent to webhooks) are deleted this long after their last delivery attempt, delivered or dead; pending ones are kept',
    { default: 30, minimum: 1, maximum: 3650 },
  ),
  webhooksConcurrency: integer(
    'WEBHOOKS_CONCURRENCY',
    'endpoints (the email channel among them) one instance delivers to at once; as many again are kept for failing or slow ones, so they never hold up a healthy one',
    { default: 8, minimum: 1, maximum: 256 },
  ),
  // 0 means one per CPU (resolved by the cluster script, which is its only reader).
  clusterWorkers: integer('CLUSTER_WORKERS', 'instances started by `npm run cluster`', {
    default: 0,
    shown: 'number of CPUs',
    minimum: 0,
    maximum: 64,
  }),
}

export type Config = { -readonly [K in keyof typeof VARIABLES]: ValueOf<(typeof VARIABLES)[K]> }
type Key = keyof typeof VARIABLES

const entries = Object.entries(VARIABLES) as [Key, Variable<unknown>][]

/** Variables that must be given together. */
const TOGETHER: [string, string][] = [
  ['BOOTSTRAP_CLIENT_ID', 'BOOTSTRAP_CLIENT_SECRET'],
  ['SMTP_URL', 'LEAD_EMAIL_TO'],
]

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
  const schema = (variable?.schema ?? {}) as { type?: string; enum?: string[]; minimum?: number; maximum?: number; minLength?: number }
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
          ? `must be a ${schema.type === 'number' ? 'number' : 'whole number'} from ${schema.minimum} to ${schema.maximum}`
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
  const { backupDir, dataDir } = config
  // As the folders really are: links resolved, `..`, `/.` and `//` gone (lib/real-path.ts).
  if (backupDir !== undefined && overlap(backupDir, dataDir)) {
    throw new ConfigError(
      `Invalid configuration: BACKUP_DIR (${backupDir}) must be outside DATA_DIR (${dataDir}): backups keep copies of leads, and the data folder must hold none once a lead is erased`,
    )
  }
  return config
}

/** A full Config from the table's defaults and the given values (tests and scripts). */
export function createConfig(partial: Partial<Config> = {}): Config {
  const config = Object.fromEntries(entries.map(([key, v]) => [key, structuredClone(v.default)])) as Config
  Object.assign(config, partial)
  // Absolute and normalised (no trailing slash, `/.`, `//` or `..`: `${dataDir}-snapshots` is beside it).
  config.dataDir = resolve(projectRoot, config.dataDir)
  if (config.backupDir !== undefined) config.backupDir = resolve(projectRoot, config.backupDir)
  const host = config.publicHost
  config.publicBaseUrl = (config.publicBaseUrl || `http://${host}${host.includes(':') ? '' : `:${config.port}`}`).replace(/\/+$/, '')
  if (config.clusterWorkers === 0) config.clusterWorkers = availableParallelism()
  config.leadEmailFrom ||= `Studio API <leads@${host.replace(/:\d+$/, '')}>`
  return config
}
