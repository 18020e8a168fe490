// What the bench reads of the machine and of its processes: CPU time and RSS from /proc, the
// machine's busy time, a disk's fsync latency, the idle RSS of a process that has just started.
import { spawnSync } from 'node:child_process'
import { closeSync, fdatasyncSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { MB } from './format.js'
import { sleep } from './processes.js'
import type { FsyncProbe, IdleRss } from './types.js'

/** The kernel's clock ticks per second (the unit of /proc's CPU times). */
export const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100

/** Resident set size of a process, bytes (VmRSS). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m?.[1] ? Number(m[1]) * 1024 : Number.NaN
}

/** CPU time of a process (all its threads), seconds, from /proc/<pid>/stat: user and system. */
export function cpuOf(pid: number): { user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // After the command: state is field 3; utime and stime are fields 14 and 15.
  return { user: Number(fields[11]) / CLK_TCK, sys: Number(fields[12]) / CLK_TCK }
}

/** Busy CPU time of the whole machine (all processes, kernel, steal), seconds. */
export function machineBusy(): number {
  const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
  // cpu  user nice system idle iowait irq softirq steal ...
  const f = first.trim().split(/\s+/).slice(1).map(Number)
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)
  return busy / CLK_TCK
}

/** The median (of none: 0). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

/**
 * fsync latency of the disk under `dir`: 4 KiB write + fdatasync, `n` times. Group commit pays
 * off in proportion to this, so the submitLead ratio is read against it.
 */
export function fsyncProbe(dir: string, n = 400): FsyncProbe {
  const file = join(dir, 'fsync-probe.bin')
  const fd = openSync(file, 'w')
  const block = Buffer.alloc(4096, 7)
  const times = new Float64Array(n)
  try {
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      writeSync(fd, block, 0, block.length, (i % 256) * block.length)
      fdatasyncSync(fd)
      times[i] = (performance.now() - t) * 1000
    }
  } finally {
    closeSync(fd)
    rmSync(file, { force: true })
  }
  times.sort()
  const at = (q: number) => times[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] ?? Number.NaN
  return { p50Us: at(0.5), p99Us: at(0.99) }
}

/**
 * Idle RSS of a process that has just started. V8 keeps the heap it grew during start-up until
 * its memory reducer runs on an idle heap (~20-30 s later on Node 20, seen up to 35 s on this
 * project's machine), so both figures are kept: the one 2 s after start-up and the settled one
 * (waits for a drop of >= 8 MB, at most `maxMs`).
 */
export async function idleRss(pid: number, maxMs = 60_000): Promise<IdleRss> {
  const started = performance.now()
  await sleep(2000)
  const early = rssOf(pid)
  let droppedAt: number | undefined
  for (;;) {
    await sleep(250)
    const now = performance.now() - started
    const rss = rssOf(pid)
    if (droppedAt === undefined && rss < early - 8 * MB) droppedAt = now
    if (droppedAt !== undefined && now - droppedAt >= 1000) return { early, settled: rss, settledAtMs: droppedAt }
    if (now >= maxMs) return { early, settled: rss, settledAtMs: undefined }
  }
}
