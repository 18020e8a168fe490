// Client secrets and API keys: 256-bit random values, stored as HMAC-SHA256 under a server key
// (a password KDF adds nothing for random secrets), compared in constant time.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const newSecret = (): string => randomBytes(32).toString('base64url')
export const newClientId = (): string => `cl_${randomBytes(12).toString('base64url')}`
export const newApiKeyId = (): string => `key_${randomBytes(9).toString('base64url')}`

export function hashSecret(pepper: string, secret: string): string {
  return createHmac('sha256', pepper).update(secret).digest('hex')
}

/** Constant-time check of a presented secret against a stored hash (hash length is fixed). */
export function secretMatches(pepper: string, secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(pepper, secret), 'hex')
  const b = Buffer.from(storedHash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * A value kept in `dataDir/keys/<name>`, created once (owner-only) when absent. Used for the
 * signing key and the hash key of the embedded default; configuration overrides both.
 */
export function keptValue(dataDir: string, name: string, create: () => string): string {
  const dir = join(dataDir, 'keys')
  const file = join(dir, name)
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  try {
    writeFileSync(file, create(), { mode: 0o600, flag: 'wx' })
  } catch (err) {
    // Another process (the CLI, a second instance) created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  return readFileSync(file, 'utf8')
}

export function loadPepper(config: { dataDir: string; secretPepper: string | undefined }): string {
  return config.secretPepper ?? keptValue(config.dataDir, 'secret-pepper', () => randomBytes(32).toString('base64url'))
}
