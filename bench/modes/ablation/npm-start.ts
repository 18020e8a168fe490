// `npm start` timed as an operator meets it: in a copy with no dist/ (a fresh clone: the first
// start builds), then again (the second start: what a restart after no change costs), each from
// spawn to the first answered request. npm, its shell and the server run in a process group of
// their own, stopped together.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { apiEnv, PROBE } from '../../lib/api.js'
import { freePort, request, sleep, tail, track } from '../../lib/processes.js'
import type { Copy } from './copies.js'

/** A first start builds everything, on a machine that may be busy: waited for up to this long. */
const FIRST_START_LIMIT_MS = 15 * 60_000

/** Whether any process of the group `pgid` is still there. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** SIGTERM to the whole group (npm, its shell, the server), SIGKILL after 15 s; resolves once all are gone. */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid
  if (pgid === undefined) return
  if (groupAlive(pgid)) process.kill(-pgid, 'SIGTERM')
  const deadline = performance.now() + 15_000
  while (groupAlive(pgid)) {
    if (performance.now() > deadline) process.kill(-pgid, 'SIGKILL')
    await sleep(50)
  }
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
}

/** One `npm start` in `copy`, on `dataDir`: spawn to first answered request, ms. */
async function npmStart(copy: Copy, dataDir: string, logFile: string): Promise<number> {
  const port = await freePort()
  const fd = openSync(logFile, 'a')
  const started = performance.now()
  // detached: a process group of its own, so that the whole group can be stopped.
  const child = spawn('npm', ['start'], { cwd: copy.dir, env: apiEnv(port, dataDir), stdio: ['ignore', fd, fd], detached: true })
  closeSync(fd)
  track(child)
  // A bench cut short stops the whole group, not npm alone.
  const killGroup = () => {
    if (child.pid !== undefined && groupAlive(child.pid)) process.kill(-child.pid, 'SIGKILL')
  }
  process.on('exit', killGroup)
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`npm start in the ${copy.name} copy ended (${child.exitCode ?? child.signalCode}); ${logFile}:\n${tail(logFile)}`)
      }
      try {
        await request(port, { path: PROBE, agent: false })
        return performance.now() - started
      } catch {
        const waited = performance.now() - started
        if (waited > FIRST_START_LIMIT_MS)
          throw new Error(`npm start in the ${copy.name} copy did not answer within 15 minutes:\n${tail(logFile)}`)
        // Every 2 ms while a start may be near; every 20 ms during a long build (the polling's own CPU).
        await sleep(waited < 3000 ? 2 : 20)
      }
    }
  } finally {
    await stopGroup(child)
    process.off('exit', killGroup)
  }
}

/** A first start (dist/ removed) and a second start of `copy`, on a fresh data folder. */
export async function firstAndSecondStart(copy: Copy, dataDir: string, logFile: string): Promise<{ firstMs: number; secondMs: number }> {
  rmSync(join(copy.dir, 'dist'), { recursive: true, force: true })
  const firstMs = await npmStart(copy, dataDir, logFile)
  const secondMs = await npmStart(copy, dataDir, logFile)
  return { firstMs, secondMs }
}
