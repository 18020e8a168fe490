// The processes the bench starts: each is tracked, and killed if the bench ends first (Ctrl-C,
// a failure); servers are started and polled until they answer, and stopped gracefully.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import * as http from 'node:http'
import { createServer } from 'node:net'
import { relative } from 'node:path'
import { performance } from 'node:perf_hooks'
import { log } from './log.js'
import { root } from './paths.js'
import type { Reply, Server } from './types.js'

const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping`)
    process.exit(130)
  })
}

/** A child process of the bench's own making, killed if the bench is. */
export function track(child: ChildProcess): void {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** A TCP port free on 127.0.0.1 now (the system's choice), for a server the bench starts. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const probe = createServer()
    probe.once('error', fail)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))))
    })
  })
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** One request to 127.0.0.1:`port`, its answer read whole (keep-alive unless `agent: false`). */
export function request(
  port: number,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string; agent?: http.Agent | false },
): Promise<Reply> {
  return new Promise((ok, fail) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers: { ...opts.headers, ...(opts.body !== undefined && { 'content-length': String(Buffer.byteLength(opts.body)) }) },
        agent: opts.agent ?? keepAlive,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => ok({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on('error', fail)
      },
    )
    req.on('error', fail)
    req.end(opts.body)
  })
}

/** The last lines of a log file. */
export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

/** How to start a server: Node's arguments, its environment, where it listens and logs. */
export interface ServerSpec {
  name: string
  nodeArgs: readonly string[]
  env: NodeJS.ProcessEnv
  port: number
  logFile: string
  /** The path polled until something answers (any status). */
  probe: string
  /** Append to the log instead of starting it afresh. */
  append?: boolean
  /** The folder it runs in (default the project root). */
  cwd?: string
}

/** Spawns a Node process and polls `probe` every 2 ms until something answers (any status). */
export async function startServer(spec: ServerSpec): Promise<Server> {
  const { name, port, logFile } = spec
  const fd = openSync(logFile, spec.append ? 'a' : 'w')
  const started = performance.now()
  const child = spawn(process.execPath, spec.nodeArgs, { cwd: spec.cwd ?? root, env: spec.env, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  track(child)
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${name} exited during start-up (${child.exitCode ?? child.signalCode}); ${relative(root, logFile)}:\n${tail(logFile)}`,
      )
    }
    try {
      await request(port, { path: spec.probe, agent: false })
      break
    } catch {
      if (performance.now() - started > 30_000) throw new Error(`${name} did not answer within 30 s:\n${tail(logFile)}`)
      await sleep(2)
    }
  }
  const startupMs = performance.now() - started
  if (child.pid === undefined) throw new Error(`${name} has no pid`)
  return { name, port, child, pid: child.pid, logFile, startupMs }
}

/** SIGTERM, then SIGKILL after 15 s; resolves once it has exited. */
export async function stopServer(s: Server | undefined): Promise<void> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return
  const exited = once(s.child, 'exit')
  s.child.kill('SIGTERM')
  const t = setTimeout(() => s.child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(t)
}
