// Erasure, down to the bytes and through a crash:
// - the embedded default with a real server process running: after `npm run leads -- erase`,
//   no file under DATA_DIR holds the erased address, phone or name in any form it was written
//   (a lead stored a moment ago, one from before a restart; the server busy meanwhile);
// - kill -9 of the CLI while it holds an erasure transaction open: every lead is either whole
//   (with its events, deliveries and idempotency record) or erased (with its record and its
//   lead.erased), never half; the next run finishes the job. On SQLite and PostgreSQL.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import pg from 'pg'
import t, { type Test } from 'tap'
import { type Config, createConfig, projectRoot } from '../../config.js'
import { openStore, sqliteFile } from '../../plugins/store/open.js'
import { backend, leadOf, testApp } from '../helpers/app.js'
import { cliBundle } from '../helpers/bundles.js'
import { field, run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'
import { sharedSecrets, startServer, tokenFrom } from '../helpers/processes.js'
import { type Delivery, receiver } from '../helpers/receiver.js'

const SUBMIT = '/scripts/enquiry_backend.php'
/** Leads of the address erased in the kill -9 test (12 transactions of ERASE_BATCH). */
const TOTAL = 1200

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })
}

/** The forms a text may have been written in: as sent, lower and upper case, JSON-escaped, UTF-16. */
function forms(texts: string[]): Buffer[] {
  const variants = texts.flatMap((s) => [s, s.toLowerCase(), s.toUpperCase(), JSON.stringify(s).slice(1, -1)])
  const escaped = texts.map((s) => s.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
  const all = [...new Set([...variants, ...escaped])]
  return all.flatMap((s) => [Buffer.from(s, 'utf8'), Buffer.from(s, 'utf16le')])
}

/** Which files under `dir` hold any of the forms, read byte by byte. */
function holding(dir: string, needles: Buffer[]): string[] {
  return filesUnder(dir).filter((file) => {
    const bytes = readFileSync(file)
    return needles.some((n) => bytes.includes(n))
  })
}

t.test('SQLite: no byte of an erased lead is left in any file under DATA_DIR, with the server running', async (t) => {
  if (backend.databaseUrl) return t.comment('the embedded default only: skipped on the PostgreSQL run')
  const dataDir = join(testdir(t, {}), 'data')
  const secrets = sharedSecrets()
  const env = {
    ...secrets,
    DATA_DIR: dataDir,
    LEADS_ALLOW_ANONYMOUS: 'true',
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    WEBHOOKS_FIRST_RETRY_MS: '50',
    RATE_LIMITS: 'submitLead=1000000, getLeads=1000000, issueToken=1000000',
  }
  const config = createConfig({ dataDir })
  const cli = (script: 'leads' | 'webhooks', ...args: string[]) =>
    run(script, args, config, { SECRET_PEPPER: secrets.SECRET_PEPPER, WEBHOOKS_ALLOW_PRIVATE: 'true' })
  let server = await startServer(t, env)
  const rx = await receiver(t)
  const added = await cli('webhooks', 'add', '--url', `${rx.url}/hook`)
  t.equal(added.code, 0, added.stderr)
  rx.secrets.set('/hook', [field(added.stdout, 'secret')])

  const person = { name: 'Zoë Targetsson', email: 'Zoe.Targetsson@Example.org', phone: '+41 44 668 18 00' }
  let n = 0
  const submit = async (url: string, token: string, lead: object, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${SUBMIT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }), ...headers },
      body: JSON.stringify(lead),
    })
    if (res.status !== 200) throw new Error(`submit: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { id: string }).id
  }
  const fillers = async (url: string, token: string, count: number) => {
    for (let i = 0; i < count; i += 25)
      await Promise.all(Array.from({ length: Math.min(25, count - i) }, () => submit(url, token, { ...leadOf(++n), note: `filler ${n}` })))
  }

  // One lead of the person before a restart (the website form), one after (the API).
  let token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  await fillers(server.url, token, 150)
  const before = await submit(server.url, '', { ...person, consent: true })
  await fillers(server.url, token, 150)
  await rx.waitFor((d) => d.some((x) => x.event.data.id === before))
  t.equal(await server.stop(), 0)
  server = await startServer(t, { ...env, PORT: String(server.port) })
  token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  await fillers(server.url, token, 100)
  const after = await submit(
    server.url,
    token,
    { ...person, email: person.email.toLowerCase(), note: 'Call after six' },
    {
      'idempotency-key': 'zoe-1',
    },
  )
  await fillers(server.url, token, 100)
  await rx.waitFor((d) => d.some((x) => x.event.data.id === after))

  const needles = forms([person.email, person.phone, person.name])
  t.ok(holding(dataDir, needles).length > 0, 'before the erasure the files hold the lead (the scan finds what is there)')

  // The server stays busy while the CLI erases: leads stored, the log read in pages.
  let busy = true
  const load = (async () => {
    while (busy) {
      await fillers(server.url, token, 5)
      await fetch(`${server.url}/leads.json?limit=100`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.arrayBuffer())
    }
  })()
  const erased = await cli('leads', 'erase', '--email', 'zoe.targetsson@example.org')
  busy = false
  await load
  t.equal(erased.code, 0, erased.stderr)
  t.match(erased.stdout, /^erased: 2$/m)
  t.match(erased.stdout, /^files: erased bytes cleared/m)
  t.same(holding(dataDir, needles), [], 'no file under DATA_DIR holds the address, the phone or the name, in any form')

  // The server goes on, and writes more (the lead.erased deliveries): still nothing.
  await rx.waitFor((d: Delivery[]) => d.filter((x) => x.event.type === 'lead.erased').length === 2)
  const log = await fetch(`${server.url}/leads.json`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(log.status, 200)
  const entries = (await log.json()) as { id: string }[]
  t.equal(entries.length, n, 'every other lead is there')
  t.notOk(entries.some((e) => e.id === before || e.id === after))
  t.same(holding(dataDir, needles), [], 'still nothing after the server wrote again')
  t.comment(
    `files checked: ${filesUnder(dataDir)
      .map((f) => f.slice(dataDir.length + 1))
      .join(', ')}`,
  )
  t.equal(await server.stop(), 0)
})

/** The CLI as a child process whose signals the test controls. */
function spawnCli(args: string[], config: Config, extraEnv: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [cliBundle(), 'leads', ...args], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: config.dataDir,
      LOG_LEVEL: 'silent',
      ...(config.databaseUrl && { DATABASE_URL: config.databaseUrl }),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/**
 * Whether another process holds an erasure's transaction open now (SQLite: the write lock;
 * PostgreSQL: the erasure lock), and how many erasures are committed.
 */
async function erasureState(config: Config): Promise<{ held: boolean; committed: number }> {
  if (config.databaseUrl) {
    const client = new pg.Client({ connectionString: config.databaseUrl })
    await client.connect()
    try {
      await client.query('begin')
      const { rows } = await client.query<{ free: boolean; committed: string }>(
        "select pg_try_advisory_xact_lock(hashtext(current_schema() || '.lead-erasure')) as free, (select count(*) from lead_erasures) as committed",
      )
      await client.query('rollback')
      return { held: rows[0]?.free === false, committed: Number(rows[0]?.committed) }
    } finally {
      await client.end()
    }
  }
  const probe = new SQLite(sqliteFile(config.dataDir), { fileMustExist: true })
  try {
    probe.pragma('busy_timeout = 0')
    const committed = Number((probe.prepare('select count(*) as n from lead_erasures').get() as { n: number }).n)
    try {
      probe.exec('BEGIN IMMEDIATE')
      probe.exec('ROLLBACK')
      return { held: false, committed }
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return { held: true, committed }
      throw err
    }
  } finally {
    probe.close()
  }
}

/** Runs the CLI and kill -9s it at a moment it is inside an erasure transaction; whether it did. */
async function killMidErasure(t: Test, config: Config): Promise<boolean> {
  const child = spawnCli(['erase', '--email', 'victim@example.com'], config)
  let output = ''
  child.stdout?.on('data', (d) => {
    output += d
  })
  child.stderr?.on('data', (d) => {
    output += d
  })
  const exited = once(child, 'exit')
  for (;;) {
    if (child.exitCode !== null) break
    child.kill('SIGSTOP')
    await new Promise((r) => setTimeout(r, 5))
    // Inside a transaction, after at least one batch committed: the kill lands half-way through.
    const now = await erasureState(config)
    if (now.held && now.committed > 0 && now.committed < TOTAL) {
      child.kill('SIGKILL')
      await exited
      return true
    }
    child.kill('SIGCONT')
    await new Promise((r) => setTimeout(r, 15))
  }
  t.comment(`the CLI finished before it could be caught: ${output}`)
  return false
}

t.test('kill -9 during an erasure: each lead whole or erased, never half; the next run finishes', async (t) => {
  const { app, config } = await testApp(t, { webhooksAllowPrivate: true })
  // An endpoint nobody listens at: every lead's event gets a delivery row (pending).
  await app.store.db
    .insertInto('webhook_endpoints')
    .values({
      id: 'we_k',
      url: 'http://127.0.0.1:9/hook',
      events: 'lead.received lead.erased',
      secret: 'whsec_k',
      created_at: new Date().toISOString(),
    })
    .execute()
  const victim = (i: number) => ({ ...leadOf(i), email: 'victim@example.com' })
  await Promise.all(
    Array.from({ length: TOTAL }, (_, i) =>
      app.leads.submit(victim(i), { clientId: null, owner: 'test', source: 'api' }, i % 3 === 0 ? `key-${i}` : undefined),
    ),
  )
  const other = (await app.leads.submit(leadOf(5000), { clientId: null, owner: 'test', source: 'api' }, 'keep-1')).id
  await app.close()
  const seeded = await openStoreFor(t, config)
  const ids = (await seeded.selectFrom('leads').select('id').where('id', '<>', other).execute()).map((r) => r.id)
  t.equal(ids.length, TOTAL)
  const keyed = new Set((await seeded.selectFrom('idempotency_keys').select('lead_id').execute()).map((r) => r.lead_id))
  t.equal(keyed.size, TOTAL / 3 + 1)

  let killed = false
  for (let attempt = 0; attempt < 3 && !killed; attempt++) killed = await killMidErasure(t, config)
  t.ok(killed, 'the CLI was killed while it held an erasure transaction open')

  const db = await openStoreFor(t, config)
  if (!config.databaseUrl) {
    const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db)
    t.same(rows, [{ integrity_check: 'ok' }], 'the database is sound')
  }
  const state = async () => {
    const leads = new Set((await db.selectFrom('leads').select('id').execute()).map((r) => r.id))
    const events = await db.selectFrom('webhook_events').select(['id', 'type', 'lead_id']).execute()
    const deliveries = new Set((await db.selectFrom('webhook_deliveries').select('event_id').execute()).map((r) => r.event_id))
    const keys = new Set((await db.selectFrom('idempotency_keys').select('lead_id').execute()).map((r) => r.lead_id))
    const erasures = new Set((await db.selectFrom('lead_erasures').select('lead_id').execute()).map((r) => r.lead_id))
    return { leads, events, deliveries, keys, erasures }
  }
  const s = await state()
  let whole = 0
  let gone = 0
  let half = 0
  for (const id of ids) {
    const received = s.events.filter((e) => e.lead_id === id && e.type === 'lead.received')
    const erasedEvents = s.events.filter((e) => e.lead_id === id && e.type === 'lead.erased')
    if (
      s.leads.has(id) &&
      received.length === 1 &&
      received.every((e) => s.deliveries.has(e.id)) &&
      s.keys.has(id) === keyed.has(id) &&
      !s.erasures.has(id) &&
      erasedEvents.length === 0
    )
      whole++
    else if (!s.leads.has(id) && received.length === 0 && !s.keys.has(id) && s.erasures.has(id) && erasedEvents.length === 1) gone++
    else half++
  }
  t.comment(`after the kill: ${gone} erased, ${whole} whole`)
  t.equal(half, 0, 'no lead is half erased')
  t.equal(whole + gone, ids.length)
  t.notOk(s.erasures.has(other) || !s.leads.has(other), 'the other address’s lead is untouched')
  t.ok(whole >= 1 && gone >= 1, 'the kill interrupted the erasure half-way')

  // The next run erases the rest, and clears the bytes of the interrupted one too.
  const again = await run('leads', ['erase', '--email', 'victim@example.com'], config)
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, new RegExp(`^erased: ${whole}$`, 'm'), 'the remaining leads of the address')
  const end = await state()
  t.same([...end.leads], [other], 'only the other address is left')
  t.equal(end.erasures.size, TOTAL)
  t.equal(end.events.filter((e) => e.type === 'lead.erased').length, TOTAL, 'one lead.erased per erased lead')
  t.same([...end.keys], [other], 'only the other lead keeps its idempotency record')
  if (!config.databaseUrl) {
    const unscrubbed = await db.selectFrom('lead_erasures').select('lead_id').where('scrubbed_at', 'is', null).execute()
    t.same(unscrubbed, [], 'every erasure, the interrupted run’s too, is cleared from the files')
    t.same(holding(config.dataDir, forms(['victim@example.com'])), [], 'no byte of the address left')
  }
})

/** A connection to the test's storage, closed when the test ends. */
async function openStoreFor(t: Test, config: Config) {
  const store = await openStore(config)
  t.teardown(() => store.close())
  return store.db
}
