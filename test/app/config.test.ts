// Configuration: loadConfig(env) defaults, errors that name the variable, RATE_LIMITS, the
// derived public base URL; the bootstrap client. (The server process refusing a bad configuration:
// test/system/config-process.test.ts.)
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { ConfigError, createConfig, loadConfig, parseRateLimits, projectRoot, VARIABLES } from '../../config.js'
import { withConfigTable } from '../../scripts/config-table.js'
import { basic, call, testApp } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'

const refused = (t: Test, env: Record<string, string>, names: RegExp, what: string) => {
  let thrown: unknown
  try {
    loadConfig(env)
  } catch (err) {
    thrown = err
  }
  t.ok(thrown instanceof ConfigError, `${what}: a ConfigError`)
  t.match((thrown as Error | undefined)?.message, names, `${what}: the message names the variable`)
}

t.test('defaults', async (t) => {
  const config = loadConfig({})
  // t.has: the fields below with these values (more settings may be added beside them).
  t.has(config, {
    host: '0.0.0.0',
    port: 3000,
    dataDir: resolve(projectRoot, 'var'),
    publicHost: 'localhost',
    publicBaseUrl: 'http://localhost:3000',
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
    requestTimeoutSeconds: 30,
    headersTimeoutSeconds: 10,
    keepAliveTimeoutSeconds: 72,
    connectionTimeoutSeconds: 60,
    metricsPort: 9464,
    metricsHost: '127.0.0.1',
  })
  t.ok(config.clientStatusTtlSeconds <= 60, 'a revoked client stops within 60 s by default')
})

t.test('values are read and typed', async (t) => {
  const env = Object.freeze({
    HOST: '127.0.0.1',
    PORT: '8080',
    DATA_DIR: '/srv/studio',
    LOG_LEVEL: 'warn',
    TOKEN_TTL_SECONDS: '900',
    LEADS_ALLOW_ANONYMOUS: 'true',
    TRUST_PROXY: '10.0.0.0/8, 192.168.1.5',
    SEED_CATALOGUE: 'false',
    CLIENT_STATUS_TTL_SECONDS: '5',
    CATALOGUE_REFRESH_SECONDS: '60',
    UNRELATED_VARIABLE: 'ignored',
  })
  const config = loadConfig(env)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.port, 8080)
  t.equal(config.dataDir, '/srv/studio')
  t.equal(config.logLevel, 'warn')
  t.equal(config.tokenTtlSeconds, 900)
  t.equal(config.leadsAllowAnonymous, true)
  t.same(config.trustProxy, ['10.0.0.0/8', '192.168.1.5'])
  t.equal(config.seedCatalogue, false)
  t.equal(config.clientStatusTtlSeconds, 5)
  t.equal(config.catalogueRefreshSeconds, 60)
  t.equal(loadConfig({ DATA_DIR: 'data-here' }).dataDir, resolve(projectRoot, 'data-here'), 'a relative DATA_DIR is on the project root')
})

t.test('bad values: a ConfigError naming the variable', async (t) => {
  refused(t, { PORT: 'abc' }, /\bPORT\b/, 'PORT=abc')
  refused(t, { PORT: '70000' }, /\bPORT\b/, 'PORT=70000')
  refused(t, { PORT: '-1' }, /\bPORT\b/, 'PORT=-1')
  refused(t, { LOG_LEVEL: 'loud' }, /\bLOG_LEVEL\b/, 'LOG_LEVEL=loud')
  refused(t, { TOKEN_TTL_SECONDS: '5' }, /\bTOKEN_TTL_SECONDS\b/, 'TOKEN_TTL_SECONDS=5')
  refused(t, { CLIENT_STATUS_TTL_SECONDS: '600' }, /\bCLIENT_STATUS_TTL_SECONDS\b/, 'a status TTL over 60 s')
  refused(t, { REQUEST_TIMEOUT_SECONDS: '0' }, /\bREQUEST_TIMEOUT_SECONDS\b/, 'no request timeout')
  refused(
    t,
    { HEADERS_TIMEOUT_SECONDS: '20', REQUEST_TIMEOUT_SECONDS: '10' },
    /\bHEADERS_TIMEOUT_SECONDS\b.*\bREQUEST_TIMEOUT_SECONDS\b/,
    'headers allowed longer than the whole request',
  )
  refused(t, { METRICS_PORT: '70000' }, /\bMETRICS_PORT\b/, 'METRICS_PORT=70000')
  refused(t, { LEADS_ALLOW_ANONYMOUS: 'maybe' }, /\bLEADS_ALLOW_ANONYMOUS\b/, 'LEADS_ALLOW_ANONYMOUS=maybe')
  refused(t, { PUBLIC_HOST: 'bad host/with path' }, /\bPUBLIC_HOST\b/, 'PUBLIC_HOST with a path')
  refused(t, { PUBLIC_BASE_URL: 'ftp://example.com' }, /\bPUBLIC_BASE_URL\b/, 'PUBLIC_BASE_URL not http(s)')
  refused(t, { SECRET_PEPPER: 'short' }, /\bSECRET_PEPPER\b/, 'a short SECRET_PEPPER')
})

t.test('TRUST_PROXY names the load balancers: addresses and CIDR ranges; true, hop counts and catch-all ranges are refused', async (t) => {
  t.equal(loadConfig({}).trustProxy, false, 'off by default')
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: '' }).trustProxy, false, 'empty: off')
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8,192.168.1.5' }).trustProxy, ['10.0.0.0/8', '192.168.1.5'])
  t.same(loadConfig({ TRUST_PROXY: ' 10.1.2.3 , fd00::/8,2001:db8::7 ' }).trustProxy, ['10.1.2.3', 'fd00::/8', '2001:db8::7'])
  t.same(loadConfig({ TRUST_PROXY: 'uniquelocal' }).trustProxy, ['uniquelocal'], "proxy-addr's named ranges")
  t.same(
    loadConfig({ TRUST_PROXY: '::ffff:10.0.0.0/104,0.0.0.0/1,::ffff:0:0/64' }).trustProxy,
    ['::ffff:10.0.0.0/104', '0.0.0.0/1', '::ffff:0:0/64'],
    'ranges that leave addresses out are accepted (a mapped range below /96 matches no client)',
  )
  const refusals: [string, RegExp][] = [
    ['true', /would trust every X-Forwarded-For hop/],
    ['TRUE', /would trust every X-Forwarded-For hop/],
    ['*', /would trust every/],
    ['1', /hop count/],
    ['2', /hop count/],
    ['0.0.0.0/0', /covers every address/],
    ['10.0.0.1,::/0', /covers every address/],
    ['::ffff:0:0/96', /"::ffff:0:0\/96", which covers every IPv4 address/],
    ['::ffff:0.0.0.0/96', /covers every IPv4 address/],
    ['0.0.0.0/1,128.0.0.0/1', /ranges that together cover every IPv4 address/],
    ['10.0.0.1,128.0.0.0/1,0.0.0.0/2,64.0.0.0/2', /together cover every IPv4 address/],
    ['::ffff:0:0/97,::ffff:128.0.0.0/97', /together cover every IPv4 address/],
    ['0.0.0.0/1,::ffff:128.0.0.0/97', /together cover every IPv4 address/],
    ['::/1,8000::/1', /together cover every IPv6 address/],
    ['10.0.0.0/33', /prefix length/],
    ['10.0.0.0/x', /prefix length/],
    ['10.0.0.0/8/8', /not an IP address/],
    ['balancer.internal', /not an IP address/],
    ['10.0.0.1,true', /"true", which is not an IP address/],
    ['127.1', /not an IP address/],
    ['fe80::1%eth0', /not an IP address/],
  ]
  for (const [value, why] of refusals) {
    let thrown: unknown
    try {
      loadConfig({ TRUST_PROXY: value })
    } catch (err) {
      thrown = err
    }
    t.ok(thrown instanceof ConfigError, `TRUST_PROXY=${value}: refused`)
    t.match((thrown as Error | undefined)?.message, why, `TRUST_PROXY=${value}: says why`)
    t.match(
      (thrown as Error | undefined)?.message,
      /TRUST_PROXY=10\.0\.0\.0\/8,192\.168\.1\.5/,
      `TRUST_PROXY=${value}: shows the list form`,
    )
  }
})

t.test('backups: off by default; BACKUP_DIR on the project root when relative; fractional intervals', async (t) => {
  t.has(loadConfig({}), { backupDir: undefined, backupIntervalMinutes: 60, backupKeep: 24 })
  const config = loadConfig({ BACKUP_DIR: 'backups', BACKUP_INTERVAL_MINUTES: '0.5', BACKUP_KEEP: '3' })
  t.has(config, { backupDir: resolve(projectRoot, 'backups'), backupIntervalMinutes: 0.5, backupKeep: 3 })
  refused(
    t,
    { BACKUP_INTERVAL_MINUTES: '0' },
    /^Invalid configuration: BACKUP_INTERVAL_MINUTES must be a number from 0\.01 to 10080/,
    'zero',
  )
  refused(t, { BACKUP_INTERVAL_MINUTES: 'hourly' }, /BACKUP_INTERVAL_MINUTES must be a number/, 'words')
  refused(t, { BACKUP_KEEP: '1.5' }, /BACKUP_KEEP must be a whole number from 1 to 10000/, 'a fraction of a backup')
  refused(
    t,
    { DATA_DIR: '/srv/studio', BACKUP_DIR: '/srv/studio/backups' },
    /BACKUP_DIR .* must be outside DATA_DIR/,
    'inside the data folder',
  )
  refused(t, { DATA_DIR: '/srv/studio', BACKUP_DIR: '/srv' }, /BACKUP_DIR .* must be outside DATA_DIR/, 'around the data folder')
  t.equal(loadConfig({ DATA_DIR: '/srv/studio', BACKUP_DIR: '/srv/studio-backups' }).backupDir, '/srv/studio-backups', 'a sibling is fine')
})

t.test('BOOTSTRAP_CLIENT_ID and BOOTSTRAP_CLIENT_SECRET go together', async (t) => {
  const secret = 's'.repeat(40)
  refused(t, { BOOTSTRAP_CLIENT_ID: 'website-form' }, /\bBOOTSTRAP_CLIENT_SECRET\b/, 'an id without a secret')
  refused(t, { BOOTSTRAP_CLIENT_SECRET: secret }, /\bBOOTSTRAP_CLIENT_ID\b/, 'a secret without an id')
  refused(t, { BOOTSTRAP_CLIENT_ID: 'website-form', BOOTSTRAP_CLIENT_SECRET: 'too-short' }, /\bBOOTSTRAP_CLIENT_SECRET\b/, 'a short secret')
  refused(
    t,
    { BOOTSTRAP_CLIENT_ID: 'website-form', BOOTSTRAP_CLIENT_SECRET: 'x'.repeat(257) },
    /\bBOOTSTRAP_CLIENT_SECRET\b/,
    'a secret over 256 characters (the spec bounds client_secret)',
  )
  refused(t, { BOOTSTRAP_CLIENT_ID: 'has space', BOOTSTRAP_CLIENT_SECRET: secret }, /\bBOOTSTRAP_CLIENT_ID\b/, 'a bad id')
  const config = loadConfig({ BOOTSTRAP_CLIENT_ID: 'website-form', BOOTSTRAP_CLIENT_SECRET: secret })
  t.equal(config.bootstrapClientId, 'website-form')
  t.equal(config.bootstrapClientSecret, secret)
})

t.test('email: SMTP_URL and LEAD_EMAIL_TO go together; addresses are read as a list; the password is never echoed', async (t) => {
  const config = loadConfig({
    SMTP_URL: 'smtps://leads:s3cret@mail.example:465',
    LEAD_EMAIL_TO: ' studio@example.com , owner@example.com',
    PUBLIC_HOST: 'api.studio.example:8443',
  })
  t.equal(config.smtpUrl, 'smtps://leads:s3cret@mail.example:465')
  t.same(config.leadEmailTo, ['studio@example.com', 'owner@example.com'])
  t.equal(config.leadEmailFrom, 'Studio API <leads@api.studio.example>', 'the default sender: the public host, without its port')
  t.equal(loadConfig({ LEAD_EMAIL_FROM: 'Atelier <hello@atelier.example>' }).leadEmailFrom, 'Atelier <hello@atelier.example>')
  t.same(loadConfig({}).leadEmailTo, [], 'no email by default')
  refused(t, { SMTP_URL: 'smtp://mail.example:587' }, /LEAD_EMAIL_TO is required when SMTP_URL is set/, 'SMTP_URL alone')
  refused(t, { LEAD_EMAIL_TO: 'studio@example.com' }, /SMTP_URL is required when LEAD_EMAIL_TO is set/, 'LEAD_EMAIL_TO alone')
  refused(
    t,
    { SMTP_URL: 'smtp://mail.example', LEAD_EMAIL_TO: 'studio at example.com' },
    /LEAD_EMAIL_TO must be one or more email addresses/,
    'not an address',
  )
  refused(
    t,
    { LEAD_EMAIL_FROM: 'Atelier <hello>' },
    /LEAD_EMAIL_FROM must be an email address, or Name <address>/,
    'a sender without an address',
  )
  let message = ''
  try {
    loadConfig({ SMTP_URL: 'http://leads:s3cret@mail.example', LEAD_EMAIL_TO: 'studio@example.com' })
  } catch (err) {
    message = (err as Error).message
  }
  t.match(message, /SMTP_URL must be an SMTP URL such as smtp:\/\//)
  t.notMatch(message, /s3cret/, 'the password is not echoed')
  t.equal(loadConfig({ WEBHOOKS_CONCURRENCY: '16', WEBHOOKS_TIMEOUT_SECONDS: '30' }).webhooksConcurrency, 16)
  refused(t, { WEBHOOKS_CONCURRENCY: '0' }, /WEBHOOKS_CONCURRENCY must be a whole number from 1 to 256/, 'no concurrency')
})

t.test('STUDIO_TIME_ZONE: UTC by default; a zone the runtime knows; anything else refused, naming the variable', async (t) => {
  t.equal(loadConfig({}).studioTimeZone, 'UTC')
  t.equal(loadConfig({ STUDIO_TIME_ZONE: 'Europe/Rome' }).studioTimeZone, 'Europe/Rome')
  t.equal(loadConfig({ STUDIO_TIME_ZONE: ' America/New_York ' }).studioTimeZone, 'America/New_York', 'trimmed')
  for (const bad of ['Mars/Olympus_Mons', 'CET+1', 'Europe/Rome; rm -rf', '']) {
    refused(t, { STUDIO_TIME_ZONE: bad }, /^Invalid configuration: STUDIO_TIME_ZONE must be a time zone name/, JSON.stringify(bad))
  }
})

t.test('RATE_LIMITS', async (t) => {
  t.same(loadConfig({ RATE_LIMITS: 'getProjects=1200/1 minute, submitLead=100' }).rateLimits, {
    getProjects: { max: 1200, window: '1 minute' },
    submitLead: { max: 100 },
  })
  t.same(parseRateLimits('  issueToken = 5 / 30 seconds ,, getLeads=7 '), {
    issueToken: { max: 5, window: '30 seconds' },
    getLeads: { max: 7 },
  })
  t.same(parseRateLimits(''), {})
  // Bounded as the spec bounds X-RateLimit-Limit (at most 1000000000) and X-RateLimit-Reset (a day).
  t.same(parseRateLimits('getProjects=1000000000/1 day'), { getProjects: { max: 1_000_000_000, window: '1 day' } })
  for (const bad of ['getProjects=1000000001', 'getProjects=5/2 days', 'getProjects=5/soon']) {
    refused(t, { RATE_LIMITS: bad }, /\bRATE_LIMITS\b/, `RATE_LIMITS=${bad}`)
  }
  for (const bad of ['getProjects', 'getProjects=lots', 'getProjects=12/', '=12', 'getProjects=-1', 'get-projects=1']) {
    refused(t, { RATE_LIMITS: bad }, /\bRATE_LIMITS\b/, `RATE_LIMITS=${bad}`)
  }
})

t.test('PUBLIC_BASE_URL: given, or derived from PUBLIC_HOST and PORT', async (t) => {
  t.equal(loadConfig({ PORT: '8080' }).publicBaseUrl, 'http://localhost:8080')
  t.equal(loadConfig({ PUBLIC_HOST: 'studio.example', PORT: '8443' }).publicBaseUrl, 'http://studio.example:8443')
  t.equal(
    loadConfig({ PUBLIC_HOST: 'studio.example:9000', PORT: '8443' }).publicBaseUrl,
    'http://studio.example:9000',
    'a host with a port keeps it',
  )
  t.equal(loadConfig({ PUBLIC_HOST: 'studio.example' }).publicHost, 'studio.example')
  const given = loadConfig({ PUBLIC_HOST: 'internal', PORT: '8080', PUBLIC_BASE_URL: 'https://api.studio.example/' })
  t.equal(given.publicBaseUrl, 'https://api.studio.example', 'given, without a trailing slash')
  t.equal(createConfig({ port: 4000 }).publicBaseUrl, 'http://localhost:4000')
})

t.test('bootstrap: a fresh data folder gets a client whose credentials are in an owner-only file', async (t) => {
  const { app, config } = await testApp(t)
  const file = join(config.dataDir, 'bootstrap-client.json')
  t.ok(existsSync(file))
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600')
  const creds = JSON.parse(readFileSync(file, 'utf8')) as { client_id: string; client_secret: string; scopes: string[] }
  t.same([...creds.scopes].sort(), ['read:leads', 'read:projects', 'write:leads'])
  const res = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(creds.client_id, creds.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(res.statusCode, 200, 'the credentials work')
  t.same(res.json().scope.split(' ').sort(), ['read:leads', 'read:projects', 'write:leads'])
  t.equal(await app.auth.admin.clients.count(), 1)

  // A restart on the same folder creates no second client and leaves the file alone.
  await app.close()
  const before = readFileSync(file, 'utf8')
  const again = await buildApp(config)
  t.teardown(() => again.close())
  await again.ready()
  t.equal(await again.auth.admin.clients.count(), 1)
  t.equal(readFileSync(file, 'utf8'), before)
  const still = await again.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(creds.client_id, creds.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(still.statusCode, 200, 'and the credentials survive the restart')
})

t.test('bootstrap: BOOTSTRAP_CLIENT_ID/SECRET create that client and write no file', async (t) => {
  const bootstrapClientId = 'website-form'
  const bootstrapClientSecret = 'k3Y-'.repeat(10)
  const { app, config } = await testApp(t, { bootstrapClientId, bootstrapClientSecret })
  t.notOk(existsSync(join(config.dataDir, 'bootstrap-client.json')), 'no credentials file')
  t.equal(await app.auth.admin.clients.count(), 1)
  const res = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(bootstrapClientId, bootstrapClientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(res.statusCode, 200)
  const wrong = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(bootstrapClientId, `${bootstrapClientSecret}x`), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(wrong.statusCode, 401)
})

t.test('the configuration table of docs/configuration.md is the one config.ts renders (npm run docs:config)', async (t) => {
  const readme = readFileSync(join(projectRoot, 'docs', 'configuration.md'), 'utf8')
  t.equal(withConfigTable(readme), readme, 'docs/configuration.md is up to date; run `npm run docs:config` after changing config.ts')
  for (const v of Object.values(VARIABLES)) t.match(readme, `| \`${v.env}\` |`, `${v.env} is documented`)
})

t.test('one set of defaults: loadConfig({}) and createConfig() agree', async (t) => {
  const { dataDir: _a, ...fromEnv } = loadConfig({})
  const { dataDir: _b, ...built } = createConfig()
  t.same(fromEnv, built)
  t.equal(createConfig().host, '0.0.0.0')
})

t.test('enum variables list the allowed values; bad values are quoted, secrets never', async (t) => {
  let thrown: Error | undefined
  try {
    loadConfig({ LOG_LEVEL: 'verbose' })
  } catch (err) {
    thrown = err as Error
  }
  t.match(thrown?.message, /LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent \(got "verbose"\)/)
  try {
    loadConfig({ SECRET_PEPPER: 'short-secret-value' })
  } catch (err) {
    thrown = err as Error
  }
  t.match(thrown?.message, /SECRET_PEPPER must be at least 32 characters long/)
  t.notMatch(thrown?.message, /short-secret-value/, 'a secret is never echoed')
})

t.test('RATE_LIMITS: unknown names are refused at start-up, naming them; the anonymous window is honoured', async (t) => {
  const dataDir = join(testdir(t, {}), 'never-made')
  const config = createConfig({ dataDir, logLevel: 'silent', rateLimits: { getProject: { max: 5 }, mcp: { max: 5 } } })
  await t.rejects(buildApp(config), {
    message: /RATE_LIMITS names "getProject", which no rate limit has; the names are: .*getProjects/,
  })
  t.notOk(existsSync(dataDir), 'refused before the data folder was made')

  const { app: open } = await testApp(t, {
    leadsAllowAnonymous: true,
    rateLimits: { submitLeadAnonymous: { max: 1, window: '10 minutes' } },
  })
  const send = () =>
    open.inject({
      method: 'POST',
      url: '/scripts/enquiry_backend.php',
      payload: { name: 'A', email: 'a@example.com', phone: '+44 20 7946 0000', consent: true },
    })
  t.equal((await send()).statusCode, 200)
  const over = await send()
  t.equal(over.statusCode, 429)
  t.ok(Number(over.headers['retry-after']) > 60, `the 10-minute anonymous window applies (Retry-After ${over.headers['retry-after']})`)
})
