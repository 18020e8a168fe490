// Client secrets and API keys: 256-bit random values, stored as HMAC-SHA256 under a server key
// (a password KDF adds nothing for random secrets), compared in constant time.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { MissingDataFile, privateDir, privateFile, writePrivateFile } from '../store/private-files.js'

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
 * A value kept in `dataDir/keys/<name>` (folder 0700, file 0600), created once when absent and
 * `mayCreate` (the server; never the CLI, whose new key the server would not know). Used for
 * the signing key and the hash key of the embedded default; configuration overrides both.
 */
export function keptValue(dataDir: string, name: string, create: () => string, mayCreate = true): string {
  const dir = join(dataDir, 'keys')
  const file = join(dir, name)
  try {
    const kept = readFileSync(file, 'utf8')
    // Kept by an older version with the umask's modes.
    privateDir(dir)
    privateFile(file)
    return kept
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    if (!mayCreate) throw new MissingDataFile(`there is no key at ${file}: a server started with this DATA_DIR creates it`)
  }
  privateDir(dir)
  try {
    writePrivateFile(file, create(), 'wx')
  } catch (err) {
    // Another process (a second instance) created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  return readFileSync(file, 'utf8')
}

export function loadPepper(config: { dataDir: string; secretPepper: string | undefined }, mayCreate = true): string {
  return config.secretPepper ?? keptValue(config.dataDir, 'secret-pepper', () => randomBytes(32).toString('base64url'), mayCreate)
}
