// `npm run bench -- --redis --pg-flush-delay-us=N`: a PostgreSQL server of the bench's own, whose
// every WAL flush takes N µs longer than this machine's disk makes it (bench/fsync-delay.c,
// preloaded into it), to read submitLead against a slower disk: a network volume, say, where a
// commit costs milliseconds. The machine's PostgreSQL binaries (`pg_config --bindir`) make a
// cluster in a temporary folder, on a spare port, with trust authentication on 127.0.0.1; it is
// stopped and removed when the bench ends. PostgreSQL refuses to run as root: as root, its
// commands run as the `postgres` user (runuser), which then owns the folder.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, chownSync, closeSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import * as os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildFsyncShim } from '../../lib/fsync-shim.js'
import { log } from '../../lib/log.js'
import { benchDir } from '../../lib/paths.js'
import { freePort, sleep } from '../../lib/processes.js'

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  stop(): Promise<void>
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()

export async function privatePostgres(flushDelayUs: number): Promise<PrivatePostgres> {
  let bindir: string
  try {
    bindir = run('pg_config', ['--bindir'])
  } catch {
    throw new Error('--pg-flush-delay-us needs the PostgreSQL server binaries and pg_config (Debian: apt-get install postgresql)')
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'studio-bench-pg-'))
  /** The folder, cluster and all; a server still shutting down may add a file meanwhile: retried. */
  const remove = () => {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 })
    } catch (err) {
      log(`could not remove the bench's PostgreSQL folder ${dir}: ${(err as Error).message}`)
    }
  }
  let shim: string
  try {
    shim = buildFsyncShim(dir)
  } catch (err) {
    remove()
    throw new Error(`--pg-flush-delay-us: ${(err as Error).message}`)
  }
  const asRoot = process.getuid?.() === 0
  // As root: the cluster's folder belongs to postgres, and the shim is readable by it.
  if (asRoot) {
    const uid = Number(run('id', ['-u', 'postgres']))
    const gid = Number(run('id', ['-g', 'postgres']))
    chownSync(dir, uid, gid)
    chmodSync(dir, 0o755)
    chmodSync(shim, 0o755)
  }
  const as = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]
  const data = join(dir, 'data')
  try {
    run(...as(join(bindir, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']))
  } catch (err) {
    remove()
    throw new Error(`--pg-flush-delay-us: initdb failed: ${(err as Error).message}`)
  }
  const port = await freePort()
  const [cmd, args] = as(join(bindir, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'])
  // Its log outlives the folder: bench/postgres-private.log (why it did not start, say).
  const logFile = join(benchDir, 'postgres-private.log')
  const logFd = openSync(logFile, 'w')
  const server: ChildProcess = spawn(cmd, args, {
    env: { ...process.env, LD_PRELOAD: shim, FSYNC_DELAY_US: String(flushDelayUs) },
    stdio: ['ignore', logFd, logFd],
  })
  closeSync(logFd)
  // A bench that fails on its way (process.exit) still stops it: the server is not our child
  // (runuser's) when we are root, so a signal to the child would not reach it.
  const onExit = () => {
    try {
      run(...as(join(bindir, 'pg_ctl'), ['-D', data, 'stop', '-m', 'immediate', '-w']))
    } catch {} // not running (a signal to the process group stopped it too)
    remove()
  }
  process.on('exit', onExit)
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const stop = async () => {
    process.off('exit', onExit)
    if (server.exitCode === null && server.signalCode === null) {
      const exited = once(server, 'exit')
      try {
        run(...as(join(bindir, 'pg_ctl'), ['-D', data, 'stop', '-m', 'fast', '-w']))
      } catch {
        server.kill('SIGKILL')
      }
      await exited
    }
    remove()
  }
  const deadline = Date.now() + 30_000
  for (;;) {
    const client = new pg.Client({ connectionString: url })
    try {
      await client.connect()
      await client.end()
      break
    } catch (err) {
      await client.end().catch(() => {})
      if (Date.now() > deadline || server.exitCode !== null) {
        await stop()
        throw new Error(
          `--pg-flush-delay-us: the bench's PostgreSQL did not start (its log: bench/postgres-private.log): ${(err as Error).message}`,
        )
      }
      await sleep(200)
    }
  }
  log(`PostgreSQL of the bench on ${port} (${bindir}), every WAL flush ${flushDelayUs} µs slower (bench/fsync-delay.c)`)
  return { url, stop }
}
