// The file work of snapshots: owner-only copies, checksums, fsync of files and folders, and the
// names that tell a finished snapshot from one being written.
import { createHash } from 'node:crypto'
import { closeSync, copyFileSync, fsyncSync, openSync, readdirSync, readlinkSync, readSync, statSync } from 'node:fs'
import { setPriority } from 'node:os'
import { join } from 'node:path'
import { makeDirs, privateDir, privateFile } from '../../plugins/store/private-files.js'

export type SnapshotKind = 'backup' | 'before-migration'

/** A finished snapshot's folder name: the prefix, then the time it was taken (sorts by time). */
export const PREFIX: Record<SnapshotKind, string> = {
  backup: 'studio-backup-',
  'before-migration': 'studio-before-migration-',
}

/** One being written: hidden, and ending in `.partial`; never what a finished one is named. */
export const partialName = (name: string): string => `.${name}.partial`
export const isPartial = (name: string): boolean => name.startsWith('.studio-') && name.endsWith('.partial')

/** `2026-11-24T06:03:12.345Z` as `20261124T060312345Z`: no colons (file systems), sorts by time. */
export const stamp = (date: Date): string => date.toISOString().replace(/[-:.]/g, '')

/** The time in a finished snapshot's name, or undefined if the name is not one. */
export function stampTime(name: string, kind: SnapshotKind): number | undefined {
  if (!name.startsWith(PREFIX[kind])) return undefined
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z(?:-\d+)?$/.exec(name.slice(PREFIX[kind].length))
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, ms] = m
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`)
}

/** Finished snapshots of a kind in `dir`, oldest first. */
export function finished(dir: string, kind: SnapshotKind): { name: string; time: number }[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  return names
    .flatMap((name) => {
      const time = stampTime(name, kind)
      return time === undefined ? [] : [{ name, time }]
    })
    .sort((a, b) => a.name.localeCompare(b.name))
}

/** Flushes a file's or a folder's contents (a folder: the names in it) to the disk. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** SHA-256 (hex) and size of a file, read in 1 MiB pieces. */
export function checksum(path: string): { sha256: string; bytes: number } {
  const hash = createHash('sha256')
  const buffer = Buffer.allocUnsafe(1 << 20)
  const fd = openSync(path, 'r')
  let bytes = 0
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null)
      if (n === 0) break
      hash.update(buffer.subarray(0, n))
      bytes += n
    }
  } finally {
    closeSync(fd)
  }
  return { sha256: hash.digest('hex'), bytes }
}

/** Copies a file owner-only (0600) into `toDir/relative`, folders on the way 0700, and fsyncs it. */
export function copyPrivate(from: string, toDir: string, relative: string): string {
  const to = join(toDir, relative)
  const parent = join(to, '..')
  if (parent !== toDir) {
    makeDirs(parent, 0o700)
    privateDir(parent)
  }
  copyFileSync(from, to)
  privateFile(to)
  fsyncPath(to)
  return to
}

export const sizeOf = (path: string): number => statSync(path).size

/** `1.2 MB` */
export function humanBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let value = bytes
  let unit = 'B'
  for (const u of units) {
    if (value < 1000) break
    value /= 1000
    unit = u
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${unit}`
}

/**
 * Lowers the calling thread's CPU priority to the lowest (nice 19), so that on a busy machine the
 * scheduler runs the server's event loop and its writer thread first and the backup in what is
 * left. On Linux a nice value is a thread's own (the thread's id comes from /proc/thread-self).
 * Best effort: elsewhere, or not allowed, nothing changes.
 */
export function yieldCpu(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    setPriority(Number.isInteger(tid) ? tid : 0, 19)
  } catch {
    // no /proc (not Linux), or not allowed: normal priority
  }
}
