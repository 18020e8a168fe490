// The token signing key and the database: behind a load balancer, an instance signing with
// another key (a second machine without JWT_PRIVATE_KEY makes its own; a key file lost and made
// again) would have its tokens refused by the others, and theirs by it: invalid_token at random.
// The database keeps the key's kid, and a server with another key refuses to start, saying what
// to do; a key changed on purpose is forgotten first (clients forget-signing-key). On the
// embedded default and on PostgreSQL.
import { generateKeyPairSync } from 'node:crypto'
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { type Config, createConfig } from '../../config.js'
import { signingKeyFrom } from '../../plugins/auth/keys.js'
import { refusedStart, startedApp, storageConfig, tokenFor } from '../helpers/app.js'
import { backedUpAndRestored, run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

const newKey = (): string => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()

/** Why the app on this configuration does not start (it must not): the error's message. */
async function startError(config: Config): Promise<string> {
  try {
    const app = await buildApp(config)
    await app.ready()
    await app.close()
    return 'it started'
  } catch (err) {
    // buildApp closes what it opened before refusing (this file would not end otherwise).
    return (err as Error).message
  }
}

/** A database whose tokens are signed with `key` (and hashed with `pepper`), a token issued there, the server stopped. */
async function issuedWith(t: Test, key: string, pepper: string): Promise<{ config: Config; token: string }> {
  const config = createConfig({
    dataDir: testdir(t, {}),
    logLevel: 'silent',
    ...(await storageConfig(t)),
    secretPepper: pepper,
    jwtPrivateKey: key,
  })
  const first = await startedApp(t, config)
  const { token } = await tokenFor(first, ['read:projects'])
  await first.close()
  return { config, token }
}

/** What getProjects answers to this bearer token: the status and the error's code, if any. */
async function projects(app: FastifyInstance, token: string): Promise<{ status: number; error?: string }> {
  const res = await app.inject({ method: 'GET', url: '/project_metadata.json', headers: { authorization: `Bearer ${token}` } })
  return { status: res.statusCode, ...(res.statusCode !== 200 && { error: String(res.headers['www-authenticate']) }) }
}

t.test('instances with different JWT_PRIVATE_KEYs on one database: the second is refused, and says which kids differ', async (t) => {
  const pepper = 'p'.repeat(43)
  const [keyA, keyB] = [newKey(), newKey()]
  const { config: a, token } = await issuedWith(t, keyA, pepper)

  const start = await refusedStart(a, { SECRET_PEPPER: pepper, JWT_PRIVATE_KEY: keyB })
  t.equal(start.code, 78, 'the server stops with EX_CONFIG')
  const [kidA, kidB] = [signingKeyFrom(keyA).kid, signingKeyFrom(keyB).kid]
  t.match(start.stderr, /JWT_PRIVATE_KEY is not the key this database's access tokens are signed with/)
  t.match(start.stderr, `this key's kid is ${kidB}, the database's ${kidA}`, 'both kids, which are public')
  t.match(start.stderr, /Give every instance the same JWT_PRIVATE_KEY/)
  t.match(start.stderr, /npm run clients -- forget-signing-key/, 'and how to change the key on purpose')
  t.notMatch(start.stderr, /PRIVATE KEY-----|MC4CAQAw/, 'no key in the message')

  const same = await startedApp(t, a)
  t.same(await projects(same, token), { status: 200 }, 'the same key starts, and the first instance’s token verifies')
})

t.test('the key file lost: refused, nothing made again; copied back: the old token verifies', async (t) => {
  const dataDir = testdir(t, {})
  const config = createConfig({ dataDir, logLevel: 'silent', ...(await storageConfig(t)) })
  const first = await startedApp(t, config)
  const { token } = await tokenFor(first, ['read:projects'])
  await first.close()
  const keyFile = join(dataDir, 'keys', 'signing-key.pem')
  copyFileSync(keyFile, join(dataDir, 'key.saved'))
  rmSync(keyFile)

  const start = await refusedStart(config)
  t.equal(start.code, 78, 'the server stops with EX_CONFIG')
  t.match(start.stderr, `${keyFile} is missing, but this database's access tokens are signed with it`)
  t.match(start.stderr, /set JWT_PRIVATE_KEY to the key it held, the same on every instance/)
  t.notOk(existsSync(keyFile), 'no new key was made')
  t.match(await startError(config), /is missing, but this database's access tokens are signed with it/, 'in-process too')
  t.notOk(existsSync(keyFile), 'still none')

  copyFileSync(join(dataDir, 'key.saved'), keyFile)
  const again = await startedApp(t, config)
  t.same(await projects(again, token), { status: 200 }, 'restored: the token issued before verifies')
})

t.test('a second instance on the same PostgreSQL database without JWT_PRIVATE_KEY is refused', async (t) => {
  const storage = await storageConfig(t)
  if (!storage.databaseUrl) {
    // One SQLite database is one data folder, which has one key file: the first test covers it.
    t.pass('the embedded default: a second data folder is a second database')
    return
  }
  const pepper = 'q'.repeat(43)
  const one = createConfig({ dataDir: testdir(t, {}), logLevel: 'silent', ...storage, secretPepper: pepper })
  await (await startedApp(t, one)).close()
  const twoDir = join(one.dataDir, 'other-machine')
  const two = createConfig({ dataDir: twoDir, logLevel: 'silent', ...storage, secretPepper: pepper })
  t.match(
    await startError(two),
    `${join(twoDir, 'keys', 'signing-key.pem')} is missing, but this database's access tokens are signed with it`,
    'its own data folder has no key, and it makes none: the database has one',
  )
  t.notOk(existsSync(join(twoDir, 'keys', 'signing-key.pem')))
})

t.test('a key changed on purpose: forget-signing-key, the new key recorded, the old tokens refused', async (t) => {
  const pepper = 'r'.repeat(43)
  const [oldKey, freshKey] = [newKey(), newKey()]
  const { config: before, token } = await issuedWith(t, oldKey, pepper)
  const after = { ...before, jwtPrivateKey: freshKey }
  t.match(await startError(after), /is not the key this database's access tokens are signed with/)

  const forgot = await run('clients', ['forget-signing-key'], after, { SECRET_PEPPER: pepper })
  t.equal(forgot.code, 0, forgot.stderr)
  t.match(forgot.stdout, /no longer checks the token signing key/)
  const app = await startedApp(t, after)
  const old = await projects(app, token)
  t.equal(old.status, 401, 'a token of the old key is refused')
  t.match(old.error, /invalid_token/)
  const { token: fresh } = await tokenFor(app, ['read:projects'])
  t.same(await projects(app, fresh), { status: 200 }, 'a token of the new key verifies')
  await app.close()
  t.match(await startError(before), /is not the key/, 'the old key is now the one refused')
  const twice = await run('clients', ['forget-signing-key'], after, { SECRET_PEPPER: pepper })
  t.match(twice.stdout, /no longer checks/, 'the new key was recorded at start')
})

t.test('a JWT_PRIVATE_KEY that is no Ed25519 PEM: a configuration error (exit 78) saying so, and how to make one', async (t) => {
  const config = createConfig({ dataDir: testdir(t, {}), logLevel: 'silent', ...(await storageConfig(t)) })
  const start = await refusedStart(config, { JWT_PRIVATE_KEY: 'not a key' })
  t.equal(start.code, 78, 'the server stops with EX_CONFIG')
  t.match(start.stderr, 'JWT_PRIVATE_KEY is not a PEM private key; generate one with: openssl genpkey -algorithm ed25519')
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  t.match(await startError({ ...config, jwtPrivateKey: rsa }), 'JWT_PRIVATE_KEY must be an Ed25519 key, not rsa')
})

t.test('a snapshot of a server whose key is JWT_PRIVATE_KEY, restored: refused without it, the old token verifies with it', async (t) => {
  const key = newKey()
  const {
    made,
    backupOutput,
    restored: into,
  } = await backedUpAndRestored(t, testdir(t, {}), { config: { jwtPrivateKey: key }, env: { JWT_PRIVATE_KEY: key } }, (app) =>
    tokenFor(app, ['read:projects']),
  )
  const { token } = made
  t.match(backupOutput, /JWT_PRIVATE_KEY/, 'the backup says the key is not in it')
  const keyFile = join(into.dataDir, 'keys', 'signing-key.pem')
  t.match(await startError(into), `${keyFile} is missing, but this database's access tokens are signed with it`)
  t.notOk(existsSync(keyFile), 'and it made no key of its own')
  const app = await startedApp(t, { ...into, jwtPrivateKey: key })
  t.same(await projects(app, token), { status: 200 }, 'with JWT_PRIVATE_KEY, the token issued before the backup verifies')
})
