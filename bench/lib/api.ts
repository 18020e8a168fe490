// The API as the bench runs it: its environment (a known bootstrap client, rate limits raised out
// of the way, no metrics listener unless asked), its processes, a token, and its lead log seeded.
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import * as os from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import SQLite from 'better-sqlite3'
import { benchDir } from './paths.js'
import { request, startServer } from './processes.js'
import type { Options, Server } from './types.js'
import { runTag } from './wrk.js'

export const CLIENT_ID = 'bench-client'
export const CLIENT_SECRET = randomBytes(32).toString('base64url')
export const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`
// Failed client authentications are counted from the attempt until it succeeds, so 32 concurrent
// token requests of one client from one address need the failure budgets raised too.
export const RATE_LIMITS =
  'getProjects=100000000, submitLead=100000000, getLeads=100000000, issueToken=100000000, authFailures=100000000, authFailuresPerAddress=100000000'
/** What the bench polls until an API answers. */
export const PROBE = '/.well-known/oauth-authorization-server'

export function apiEnv(port: number, dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    RATE_LIMITS,
    // Two API builds run side by side (fsync on and off): no metrics listener, whose port they would share.
    METRICS_PORT: '0',
    BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    ...extra,
  }
}

const profDir = join(benchDir, 'profiles')

/** Node's flags for an API process: --cpu-prof's (the folder made on first use), then --api-node-args. */
export function apiFlags(options: Options, name: string): string[] {
  if (!options.cpuProf) return [...options.apiNodeArgs]
  if (!existsSync(profDir)) {
    mkdirSync(profDir, { recursive: true })
    writeFileSync(join(profDir, '.gitignore'), '*\n')
  }
  return ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`, ...options.apiNodeArgs]
}

/** An API process of `script` (default the measured bundle) on a data folder, with --child-env. */
export function startApi(
  options: Options,
  name: string,
  dataDir: string,
  port: number,
  logFile: string,
  { append = false, script = options.serverJs, extra = {} }: { append?: boolean; script?: string; extra?: Record<string, string> } = {},
): Promise<Server> {
  return startServer({
    name,
    nodeArgs: [...apiFlags(options, name), script],
    env: { ...apiEnv(port, dataDir, extra), ...options.childEnv },
    port,
    logFile,
    probe: PROBE,
    append,
  })
}

/** An access token of the bench's client. */
export async function token(port: number): Promise<string> {
  const r = await request(port, {
    method: 'POST',
    path: '/api/token',
    headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  if (r.status !== 200) throw new Error(`token request: ${r.status} ${r.body.toString()}`)
  return (JSON.parse(r.body.toString()) as { access_token: string }).access_token
}

/** Wall time of one MCP initialize request (a new session, as an agent's first call), ms. */
export async function mcpInitializeMs(port: number): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'studio-bench', version: '1' } },
  })
  const started = performance.now()
  const reply = await request(port, {
    method: 'POST',
    path: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body,
  })
  const ms = performance.now() - started
  if (reply.status !== 200) throw new Error(`/mcp initialize: ${reply.status} ${reply.body.toString().slice(0, 300)}`)
  return ms
}

let leadCounter = 0
/** A unique, valid lead (for seeding through the API; wrk's runs build theirs in submit-lead.lua). */
function nextLead(): string {
  const n = ++leadCounter
  return JSON.stringify({
    name: `Bench Lead ${n}`,
    email: `lead${n}.${runTag}@example.com`,
    phone: `+44 20 ${String(n).padStart(8, '0')}`,
  })
}

/** Sends `count` unique leads through the API, `concurrency` at a time. */
export async function seedViaApi(port: number, bearer: string, count: number, concurrency = 32): Promise<void> {
  let sent = 0
  const worker = async () => {
    while (sent < count) {
      sent++
      const r = await request(port, {
        method: 'POST',
        path: '/scripts/enquiry_backend.php',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: nextLead(),
      })
      if (r.status !== 200) throw new Error(`seeding a lead: ${r.status} ${r.body.toString()}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

/** The leads in a SQLite database file. */
export function countRows(dbFile: string): number {
  const db = new SQLite(dbFile, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare('select count(*) as n from leads').get() as { n: number }).n
  } finally {
    db.close()
  }
}

/**
 * The one place the bench uses the server's code: a big lead log (the memory run's, the backup
 * mode's) is written through the store's own migrations and the leads repository, so it is
 * exactly what the API writes and reads.
 */
export async function seedLeadLog(
  dataDir: string,
  count: number,
  lead: { name: string; emailPrefix: string; clientId: string },
): Promise<void> {
  const [{ openStore }, { LeadsRepository }] = await Promise.all([
    import('../../plugins/store/open.js'),
    import('../../features/leads/repository.js'),
  ])
  const store = await openStore({ dataDir, databaseUrl: undefined, dbPoolMax: 1 })
  const leads = new LeadsRepository(store)
  try {
    const base = Date.now() - count * 1000
    for (let from = 0; from < count; from += 2000) {
      const batch = Array.from({ length: Math.min(2000, count - from) }, (_, k) => {
        const i = from + k
        return {
          id: randomUUID(),
          fields: {
            name: `${lead.name} ${i}`,
            email: `${lead.emailPrefix}.${i}@example.com`,
            phone: `+44 20 ${String(i).padStart(8, '0')}`,
          },
          received_at: new Date(base + i * 1000).toISOString(),
          client_id: lead.clientId,
        }
      })
      await leads.insertBatch(batch, new Map(), new Date(0).toISOString())
    }
  } finally {
    await store.close()
  }
}
