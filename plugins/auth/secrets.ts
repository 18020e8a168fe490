// Client secrets and API keys: 256-bit random values, stored as HMAC-SHA256 under a server key
// (a password KDF adds nothing for random secrets), compared in constant time.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { linkSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { ConfigError } from '../../config.js'
import { MissingDataFile, privateDir, privateFile, writePrivateFile } from '../store/private-files.js'
import type { Database } from '../store/schema.js'

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
  // Written whole under a name of its own, then linked into place: link() fails when the name is
  // taken, so of processes starting together (instances on one data folder) one wins, and the
  // others read its whole file. Creating the name itself ('wx') would let them read it empty,
  // between its creation and its write: an empty pepper, an unreadable signing key.
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.new`
  writePrivateFile(draft, create(), 'wx')
  try {
    linkSync(draft, file)
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    rmSync(draft, { force: true })
  }
  return readFileSync(file, 'utf8')
}

/**
 * A key given by its variable, else kept in `dataDir/keys/<file>` (keptValue, made there only
 * when `mayCreate`), and where it comes from: the variable's name or the file's path, for messages.
 */
export function configuredKey(variable: string, value: string | undefined, dataDir: string, file: string, create: () => string) {
  return {
    source: value !== undefined ? variable : join(dataDir, 'keys', file),
    load: (mayCreate = true): string => value ?? keptValue(dataDir, file, create, mayCreate),
  }
}

const pepperKey = (config: { dataDir: string; secretPepper: string | undefined }) =>
  configuredKey('SECRET_PEPPER', config.secretPepper, config.dataDir, 'secret-pepper', () => randomBytes(32).toString('base64url'))

export function loadPepper(config: { dataDir: string; secretPepper: string | undefined }, mayCreate = true): string {
  return pepperKey(config).load(mayCreate)
}

const PEPPER_CHECK = 'secret-pepper'

/** What the database keeps of the pepper: a keyed hash of a fixed text under it (the pepper cannot be had from it). */
const pepperCheck = (pepper: string): string => hashSecret(pepper, 'studio-api: the pepper of this database')

const LOST_FOR_GOOD =
  'If it is lost for good, so is every client secret and API key: run `npm run clients -- forget-pepper`, start the server ' +
  '(it makes a new pepper), then give each client a new secret with `npm run clients -- rotate CLIENT_ID` and each API key a new one'

/** A key the database keeps a check value of: how to load it, its check value, and what to say when they disagree. */
export interface KeyCheck<K> {
  /** The check's row in `key_checks`. */
  name: string
  /** The key: created only when `mayCreate` (a database with no check yet); a missing file throws MissingDataFile. */
  load(mayCreate: boolean): K
  check(key: K): string
  /** The ConfigError's message when the key file is missing but the database has a check. */
  missing: string
  /** The ConfigError's message when the key is not the one the database's check was made from. */
  mismatch(key: K, recorded: string): string
}

/**
 * A key checked against the database: the database keeps a check value of the key it was used
 * with (recorded by the first server or command that uses it). Another key (a key file lost and
 * made again, an instance given another variable) would fail silently; this refuses instead (a
 * ConfigError: the server exits with EX_CONFIG), saying what to do. With a check recorded, a
 * missing key file is never made again (`mayCreate` applies only to a database that has none).
 */
export async function checkedKey<K>(db: Kysely<Database>, spec: KeyCheck<K>, mayCreate = true): Promise<K> {
  const recorded = async () => (await db.selectFrom('key_checks').select('value').where('name', '=', spec.name).executeTakeFirst())?.value
  const before = await recorded()
  let key: K
  try {
    key = spec.load(mayCreate && before === undefined)
  } catch (err) {
    if (!(err instanceof MissingDataFile) || before === undefined) throw err
    throw new ConfigError(spec.missing)
  }
  const check = spec.check(key)
  if (before === undefined) {
    await db
      .insertInto('key_checks')
      .values({ name: spec.name, value: check })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute()
  }
  // Read again: an instance starting at the same moment with another key may have recorded its own first.
  const now = await recorded()
  if (now !== check) throw new ConfigError(spec.mismatch(key, now ?? ''))
  return key
}

/** Forgets a key's check value (`clients forget-pepper`, `forget-signing-key`): the next server records the key it has. */
export async function forgetCheck(db: Kysely<Database>, name: string): Promise<boolean> {
  const res = await db.deleteFrom('key_checks').where('name', '=', name).executeTakeFirst()
  return Number(res.numDeletedRows) > 0
}

/**
 * The pepper, checked against the database (checkedKey): another pepper would fail every client's
 * authentication, silently.
 */
export function databasePepper(
  db: Kysely<Database>,
  config: { dataDir: string; secretPepper: string | undefined },
  mayCreate = true,
): Promise<string> {
  const { source, load } = pepperKey(config)
  return checkedKey(
    db,
    {
      name: PEPPER_CHECK,
      load,
      check: pepperCheck,
      missing:
        `${source} is missing, but this database's client secrets and API keys were hashed with it: ` +
        `restore it from a backup (npm run restore, or copy the file back), or set SECRET_PEPPER to the value it had. ${LOST_FOR_GOOD}`,
      mismatch: () =>
        `${source} is not the pepper this database's client secrets and API keys were hashed with: every client ` +
        'would fail to authenticate. Give every instance the same SECRET_PEPPER (or none, on the embedded default), or restore ' +
        `the key file the database was used with. ${LOST_FOR_GOOD}`,
    },
    mayCreate,
  )
}

/** Forgets the pepper's check value (`clients forget-pepper`): the next server records the pepper it has. */
export const forgetPepper = (db: Kysely<Database>): Promise<boolean> => forgetCheck(db, PEPPER_CHECK)
