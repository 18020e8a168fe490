// Real processes for the scale-out and fault tests: API servers as child processes, and
// throwaway PostgreSQL and Redis servers on spare ports (never the machine's shared ones).
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { projectRoot } from '../../config.js'
import { serverBundle } from './bundles.js'

const run = promisify(execFile)

// Ports for servers this suite starts as processes (API servers, throwaway PostgreSQL and Redis).
// A port is handed out once per test run and stays this test process's until it exits, because
// tests stop a server and start the next one on the same port (restarts, kill -9, restores).
// Asking the kernel for a free port (listen on 0, close) is not enough for that: the port is free
// again between a stop and the restart, and another test file's listen(0) may be given it; the
// restart then fails to bind while its /healthz probe is answered by the other file's server
// (CI saw exactly that: a token refused by a stranger's server, a test's servers gone). So ports
// come from below the kernel's ephemeral range (32768-60999 here), which listen(0) and outgoing
// connections never use (read from /proc), and each is reserved across processes by creating a file exclusively.
const PORTS_TO = (() => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 12_000 ? Math.min(low, 32_000) : 32_000
  } catch {
    return 32_000
  }
})()
const PORTS_FROM = Math.max(1024, PORTS_TO - 12_000)
const reservations = join(tmpdir(), 'studio-test-ports')
const reserved: string[] = []
let cleanupRegistered = false

/** Whether process `pid` exists (EPERM: it does, as another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Reserves `port` for this process unless a live process holds it. */
function reserve(port: number): boolean {
  const file = join(reservations, String(port))
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      reserved.push(file)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      // A reservation left by a process that has died (kill -9 of a test run) is taken over.
      const holder = Number(readFileSync(file, 'utf8').trim() || '0')
      if (holder > 0 && alive(holder)) return false
      rmSync(file, { force: true })
    }
  }
  return false
}

/** Whether nothing listens on `port` at 127.0.0.1 (another program of the machine may). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', () => resolve(false))
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)))
  })
}

/** A port no other test process of this run will be given, and nothing listens on now. */
export async function freePort(): Promise<number> {
  mkdirSync(reservations, { recursive: true })
  if (!cleanupRegistered) {
    cleanupRegistered = true
    process.once('exit', () => {
      for (const file of reserved) rmSync(file, { force: true })
    })
  }
  for (let tries = 0; tries < 1000; tries++) {
    const port = PORTS_FROM + Math.floor(Math.random() * (PORTS_TO - PORTS_FROM))
    if (!reserve(port)) continue
    if (await bindable(port)) return port
  }
  throw new Error(`no free port between ${PORTS_FROM} and ${PORTS_TO} (reservations in ${reservations})`)
}

/**
 * A real part this test needs. In CI (CI=true) a missing part fails the test; elsewhere the test
 * is skipped with a loud message saying what to install.
 */
export function requirePart(t: Test, available: boolean, what: string, install: string): boolean {
  if (available) return true
  const message = `${what} is not available: ${install}`
  if (process.env.CI === 'true') {
    t.fail(`${message} (required in CI)`)
  } else {
    process.stderr.write(`\n!!! SKIPPED: ${message}\n\n`)
    t.skip(message, () => {})
  }
  return false
}

export const sharedSecrets = () => ({
  JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  SECRET_PEPPER: randomBytes(32).toString('base64url'),
  BOOTSTRAP_CLIENT_ID: `cl_test_${randomBytes(4).toString('hex')}`,
  BOOTSTRAP_CLIENT_SECRET: randomBytes(32).toString('base64url'),
})

export interface ServerProcess {
  url: string
  port: number
  child: ChildProcess
  output(): string
  /**
   * Resolves once the server's output (stdout and stderr) matches `pattern`: a log line waited for
   * instead of slept for (the logger flushes in its own time). Only the output after its first
   * `from` characters counts (`output().length` before the action waited on). Rejects after `withinMs`.
   */
  waitFor(pattern: RegExp, withinMs?: number, from?: number): Promise<void>
  /** SIGTERM (graceful); resolves with the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL: no chance to clean up. */
  kill9(): Promise<void>
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)))
}

export interface StartOptions {
  /** Node's arguments: default the server bundle (dist/server.bundle.js, `npm run build:server`). */
  args?: string[]
  /** Default the project root. */
  cwd?: string
  /**
   * How long to wait for /healthz; default 90 s. A hang detector, not a speed check (start-up time
   * is the bench's): from source through tsx a start takes 8-10 s on an idle 2-core machine, and
   * more than 20 s while other test files load it (CI saw it once).
   */
  withinMs?: number
}

/** Starts the server bundle (or `options.args`) as its own process and waits until /healthz answers. */
export async function startServer(t: Test, env: Record<string, string>, options: StartOptions = {}): Promise<ServerProcess> {
  const port = Number(env.PORT ?? (await freePort()))
  const child = spawn(process.execPath, options.args ?? [serverBundle()], {
    cwd: options.cwd ?? projectRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // No metrics listener unless a test asks for one (servers run side by side).
      METRICS_PORT: '0',
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const waiting = new Set<() => void>()
  const heard = (d: Buffer) => {
    output += d
    for (const check of waiting) check()
  }
  child.stdout?.on('data', heard)
  child.stderr?.on('data', heard)
  const url = `http://127.0.0.1:${port}`
  const server: ServerProcess = {
    url,
    port,
    child,
    output: () => output,
    waitFor(pattern, withinMs = 30_000, from = 0) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(output.slice(from))) return
          clearTimeout(timer)
          waiting.delete(check)
          resolve()
        }
        const timer = setTimeout(() => {
          waiting.delete(check)
          reject(new Error(`no ${pattern} in the output of the server on port ${port} within ${withinMs / 1000} s:\n${output}`))
        }, withinMs)
        waiting.add(check)
        check()
      })
    },
    async stop() {
      child.kill('SIGTERM')
      const code = await exited(child)
      // A stop that is not clean says why: the server's own output goes with the failed assertion.
      if (code !== 0) process.stderr.write(`server on port ${port} stopped with ${code} (signal ${child.signalCode}):\n${output}\n`)
      return code
    },
    async kill9() {
      child.kill('SIGKILL')
      await exited(child)
    },
  }
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) await server.kill9()
  })
  const withinMs = options.withinMs ?? 90_000
  const deadline = Date.now() + withinMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${output}`)
    try {
      const res = await fetch(`${url}/healthz`)
      if (res.ok) return server
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start within ${withinMs / 1000} s: ${output}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function tokenFrom(url: string, clientId: string, secret: string, scope?: string): Promise<string> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) })
  const res = await fetch(`${url}/api/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    body,
  })
  if (!res.ok) throw new Error(`token: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

// --- PostgreSQL -------------------------------------------------------------------------

function postgresBin(): string | undefined {
  const base = '/usr/lib/postgresql'
  if (!existsSync(base)) return undefined
  const version = readdirSync(base).sort().pop()
  const bin = version && join(base, version, 'bin')
  return bin && existsSync(join(bin, 'initdb')) ? bin : undefined
}

export const canRunPostgres = (): boolean => postgresBin() !== undefined && process.getuid?.() === 0

/** Throwaway PostgreSQL servers need the server binaries, and root to run them as postgres. */
export const needsPostgres = (t: Test): boolean =>
  requirePart(
    t,
    canRunPostgres(),
    'PostgreSQL server binaries (initdb, pg_ctl) and root to run them as postgres',
    'apt-get install postgresql',
  )

export interface Throwaway {
  url: string
  port: number
  stop(): Promise<void>
  start(): Promise<void>
}

/** A PostgreSQL server of its own (initdb in a temp folder, run as the postgres user). */
export async function throwawayPostgres(t: Test): Promise<Throwaway> {
  const bin = postgresBin()
  if (!bin) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql')
  const dir = mkdtempSync(join(tmpdir(), 'studio-pg-'))
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim())
  chownSync(dir, uid, gid)
  const port = await freePort()
  const asPostgres = (cmd: string, args: string[]) => run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { timeout: 60_000 })
  await asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'])
  const pgctl = (args: string[]) => asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-w', '-t', '30', ...args])
  const start = async () => {
    await pgctl(['-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start'])
  }
  const stop = async () => {
    await pgctl(['-m', 'fast', 'stop'])
  }
  await start()
  await asPostgres('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-c', 'create database studio'])
  t.teardown(async () => {
    await stop().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })
  return { url: `postgres://postgres@127.0.0.1:${port}/studio`, port, stop, start }
}

// --- Redis ------------------------------------------------------------------------------

export const canRunRedis = (): boolean => existsSync('/usr/bin/redis-server')

/** A Redis server of its own on a spare port, nothing on disk. */
export async function throwawayRedis(t: Test): Promise<Throwaway> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    const deadline = Date.now() + 10_000
    for (;;) {
      try {
        await run('redis-cli', ['-p', String(port), 'ping'])
        return
      } catch {
        if (Date.now() > deadline) throw new Error('redis-server did not start')
        await new Promise((r) => setTimeout(r, 50))
      }
    }
  }
  const stop = async () => {
    if (!child || child.exitCode !== null) return
    const c = child
    c.kill('SIGKILL')
    await exited(c)
  }
  await start()
  t.teardown(stop)
  return { url: `redis://127.0.0.1:${port}`, port, stop, start }
}

/** A fresh database on the machine's own PostgreSQL (shared server, own database), dropped after. */
export async function freshMachineDatabase(t: Test): Promise<string | undefined> {
  const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'
  const name = `studio_t_${randomBytes(5).toString('hex')}`
  const pg = (await import('pg')).default
  const admin = new pg.Client({ connectionString: base })
  try {
    await admin.connect()
  } catch {
    return undefined
  }
  await admin.query(`create database ${name}`)
  await admin.end()
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: base })
    await c.connect()
    await c.query(`drop database if exists ${name} with (force)`)
    await c.end()
  })
  const url = new URL(base)
  url.pathname = `/${name}`
  url.search = ''
  return url.toString()
}

/** The machine's PostgreSQL answered (freshMachineDatabase gave a URL); otherwise skip or fail, loudly. */
export const needsMachinePostgres = (t: Test, databaseUrl: string | undefined): databaseUrl is string =>
  requirePart(
    t,
    databaseUrl !== undefined,
    'PostgreSQL at 127.0.0.1:5432',
    'start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  )

export async function machineRedisAvailable(): Promise<boolean> {
  try {
    await run('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'], { timeout: 2000 })
    return true
  } catch {
    return false
  }
}
