// Test helpers: a fresh app on its own data folder per test, clients and tokens, and call(),
// which checks every response against the spec (schema for its status, headers every response
// must carry) so that no test sees a response the contract does not describe.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import type { Test } from 'tap'
import { type BuildOptions, buildApp } from '../../app.js'
import { type Config, createConfig, projectRoot } from '../../config.js'
import { createClient } from '../../plugins/auth/admin.js'
import { Conformance } from '../../plugins/spec/conformance.js'
import { Spec } from '../../plugins/spec/document.js'
import { loadSpec } from '../../plugins/spec/load.js'
import { serverBundle } from './bundles.js'
import { subfolder } from './folders.js'

/**
 * The spec as the tests read it: the same document the app loads by default, and the one the
 * tests' apps are built on unless a test gives its own (the Spec works out each operation's
 * deprecations and each schema's $refs once, not once an app).
 */
export const spec = new Spec(loadSpec())

export interface TestApp {
  app: FastifyInstance
  config: Config
}

/**
 * The storage the suite runs on: the embedded SQLite default, or (second CI run) the PostgreSQL
 * and Redis named by DATABASE_URL and REDIS_URL, with a schema and a key prefix of its own per
 * test app so tests never see each other's data.
 */
export const backend = {
  databaseUrl: process.env.DATABASE_URL || undefined,
  redisUrl: process.env.REDIS_URL || undefined,
}

/** A fresh PostgreSQL schema in the suite's database, dropped when the test ends. */
export async function freshSchemaUrl(t: Test, baseUrl: string): Promise<string> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: baseUrl })
  await admin.connect()
  await admin.query(`create schema ${schema}`)
  await admin.end()
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: baseUrl })
    await c.connect()
    await c.query(`drop schema if exists ${schema} cascade`)
    await c.end()
  })
  const url = new URL(baseUrl)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

/** Storage settings for one test: SQLite in the test's folder, or a fresh schema + key prefix. */
export async function storageConfig(t: Test): Promise<Partial<Config>> {
  const out: Partial<Config> = {}
  if (backend.databaseUrl) out.databaseUrl = await freshSchemaUrl(t, backend.databaseUrl)
  if (backend.redisUrl) {
    out.redisUrl = backend.redisUrl
    out.redisPrefix = `test-${randomBytes(6).toString('hex')}:`
  }
  return out
}

export async function testApp(t: Test, overrides: Partial<Config> = {}, options: BuildOptions = {}): Promise<TestApp> {
  const dataDir = overrides.dataDir ?? subfolder(t, 'app-')
  const config = createConfig({ dataDir, logLevel: 'silent', ...(await storageConfig(t)), ...overrides })
  const app = await buildApp(config, { spec, ...options })
  t.teardown(() => app.close())
  await app.ready()
  return { app, config }
}

/** An app on exactly this configuration, started; closed at the end of the test. */
export async function startedApp(t: Test, config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config, { spec })
  t.teardown(() => app.close())
  await app.ready()
  return app
}

/**
 * The server, as a process, on this configuration's storage (with `env`): for a start it must
 * refuse (a key that is not the database's). Its exit code and stderr.
 */
export function refusedStart(config: Config, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [serverBundle()],
      {
        cwd: projectRoot,
        timeout: 60_000,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          DATA_DIR: config.dataDir,
          PORT: '0',
          LOG_LEVEL: 'warn',
          ...(config.databaseUrl && { DATABASE_URL: config.databaseUrl }),
          ...env,
        },
      },
      (err, _stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr: String(stderr) }),
    )
  })
}

export async function newClient(app: FastifyInstance, scopes: string[], name = 'test client') {
  return createClient(app.auth.admin, { name, scopes })
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

/**
 * A token with the given scopes, from the real token endpoint; for the REST API unless another
 * resource (RFC 8707, e.g. `${base}/mcp`) is named.
 */
export async function tokenFor(
  app: FastifyInstance,
  scopes: string[],
  resource?: string,
): Promise<{ token: string; clientId: string; secret: string }> {
  const client = await newClient(app, scopes)
  const form = new URLSearchParams({ grant_type: 'client_credentials', ...(resource !== undefined && { resource }) })
  const res = await app.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: form.toString(),
  })
  if (res.statusCode !== 200) throw new Error(`token request failed: ${res.statusCode} ${res.body}`)
  return { token: res.json().access_token, clientId: client.client_id, secret: client.client_secret }
}

/** The one checker of responses against the spec (plugins/spec/conformance.ts), as the suites use it. */
export const conformance = new Conformance(spec)

export { type HeaderSpec, RATE_LIMIT_EXEMPT } from '../../plugins/spec/conformance.js'

/** The spec's description of a response: the JSON schema of its body, if it has one, and its headers. */
export const responseSpec = (method: string, url: string, status: number) => conformance.responseSpec(method, url, status)

/**
 * Injects a request and checks the response against the contract: the status is declared for
 * the operation, the JSON body validates against its schema, and the headers every response
 * carries are there (the rate-limit headers on every path but the probes).
 */
export async function call(t: Test, app: FastifyInstance, opts: InjectOptions): Promise<LightMyRequestResponse> {
  const res = await app.inject(opts)
  const findings = conformance.check({
    method: opts.method ?? 'GET',
    url: String(opts.url ?? '/'),
    status: res.statusCode,
    headers: res.headers,
    body: res.body,
  })
  for (const f of findings) t.ok(f.ok, f.what, f.detail === undefined ? {} : { detail: f.detail })
  return res
}

export const leadOf = (n: number | string) => ({
  name: `Prospect ${n}`,
  email: `prospect${n}@example.com`,
  phone: `+44 20 7946 ${String(n).padStart(4, '0').slice(-4)}`,
})
