// Which storage failures mean "unreachable, retry later" (503) rather than a bug (500).
import { AppError } from '../errors/codes.js'

const CODES = new Set([
  // network
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  // PostgreSQL: admin shutdown, crash shutdown, cannot connect now, too many connections, connection exceptions
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  // SQLite: locked past the busy timeout, I/O trouble, disk full
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
])

const MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /connection error/i,
  /Client was closed/i,
  /pool (is )?(ended|closed)/i,
]

/** The SQLite file was deleted or replaced while open (open.ts): unavailable until a restart. */
export class StorageLost extends Error {
  readonly code = 'STORAGE_LOST'
}

export function isStorageUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null
  if (!e) return false
  if (err instanceof StorageLost) return true
  if (typeof e.code === 'string' && (CODES.has(e.code) || e.code.startsWith('SQLITE_IOERR'))) return true
  return typeof e.message === 'string' && MESSAGES.some((m) => m.test(e.message as string))
}

export const storageUnavailable = (): AppError =>
  new AppError('service_unavailable', 'Storage is temporarily unreachable; nothing was stored.', 'retry in a few seconds', {
    'retry-after': '5',
  })
