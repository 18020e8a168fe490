// The secret pepper and the database: client secrets and API keys are stored as HMACs under the
// pepper, so a server with another pepper (a lost key file made again, an instance given another
// SECRET_PEPPER) would answer invalid_client to every client. It refuses to start instead, saying
// what to do; a pepper lost for good is forgotten on purpose (clients forget-pepper), and every
// client then gets a new secret. On the embedded default and on PostgreSQL.
import { copyFileSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { createConfig } from '../../config.js'
import { basic, newClient, refusedStart, startedApp, storageConfig } from '../helpers/app.js'
import { backedUpAndRestored, field, run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

const tokenStatus = async (app: FastifyInstance, id: string, secret: string): Promise<number> =>
  (
    await app.inject({
      method: 'POST',
      url: '/api/token',
      headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })
  ).statusCode

/** A server's storage with its pepper in the data folder, one client made there, the server stopped. */
async function storageWithClient(t: Test) {
  const dataDir = testdir(t, {})
  const config = createConfig({ dataDir, logLevel: 'silent', ...(await storageConfig(t)) })
  const first = await startedApp(t, config)
  const client = await newClient(first, ['read:projects'])
  t.equal(await tokenStatus(first, client.client_id, client.client_secret), 200, 'the client authenticates')
  await first.close()
  return { dataDir, config, client, pepperFile: join(dataDir, 'keys', 'secret-pepper') }
}

t.test('the key file lost: refused, nothing made again; restored: the old secrets work', async (t) => {
  const { dataDir, config, client, pepperFile } = await storageWithClient(t)

  copyFileSync(pepperFile, join(dataDir, 'pepper.saved'))
  rmSync(pepperFile)
  const start = await refusedStart(config)
  t.equal(start.code, 78, 'the server stops with EX_CONFIG')
  const message = start.stderr
  t.match(message, `${pepperFile} is missing, but this database's client secrets and API keys were hashed with it`)
  t.match(message, /restore it from a backup/)
  t.match(message, /npm run clients -- forget-pepper/, 'and what to do if it is lost for good')
  t.notOk(existsSync(pepperFile), 'no new pepper was made')
  const cli = await run('clients', ['list'], config)
  t.not(cli.code, 0, 'the CLI refuses too')

  copyFileSync(join(dataDir, 'pepper.saved'), pepperFile)
  const again = await startedApp(t, config)
  t.equal(await tokenStatus(again, client.client_id, client.client_secret), 200, 'restored: the old secret authenticates')
})

t.test('instances with different SECRET_PEPPERs on one database: the second is refused', async (t) => {
  const storage = await storageConfig(t)
  const dataDir = testdir(t, {})
  const a = createConfig({ dataDir, logLevel: 'silent', ...storage, secretPepper: 'a'.repeat(43) })
  const b = createConfig({ dataDir, logLevel: 'silent', ...storage, secretPepper: 'b'.repeat(43) })
  const first = await startedApp(t, a)
  const client = await newClient(first, ['read:projects'])
  await first.close()
  const start = await refusedStart(b, { SECRET_PEPPER: 'b'.repeat(43) })
  t.equal(start.code, 78, 'the server stops with EX_CONFIG')
  const message = start.stderr
  t.match(message, /SECRET_PEPPER is not the pepper this database's client secrets and API keys were hashed with/)
  t.notMatch(message, /a{43}|b{43}/, 'no pepper in the message')
  const created = await run('clients', ['create', '--name', 'wrong pepper', '--scopes', 'read:projects'], b, {
    SECRET_PEPPER: 'b'.repeat(43),
  })
  t.not(created.code, 0, 'the CLI with the other pepper creates nothing')
  t.match(created.stderr, /is not the pepper this database/)
  const same = await startedApp(t, a)
  t.equal(await tokenStatus(same, client.client_id, client.client_secret), 200, 'the right pepper still starts and authenticates')
})

t.test('a pepper lost for good: forget-pepper, a new pepper, each client rotated', async (t) => {
  const { config, client, pepperFile } = await storageWithClient(t)
  rmSync(pepperFile)
  t.equal((await refusedStart(config)).code, 78)

  const forgot = await run('clients', ['forget-pepper'], config)
  t.equal(forgot.code, 0, forgot.stderr)
  t.match(forgot.stdout, /no longer checks the secret pepper/)
  t.match(forgot.stdout, /npm run clients -- rotate CLIENT_ID/)
  const app = await startedApp(t, config)
  t.ok(existsSync(pepperFile), 'the server made a new pepper')
  t.equal(await tokenStatus(app, client.client_id, client.client_secret), 401, 'the old secret fails, as it must')
  const rotated = await run('clients', ['rotate', client.client_id], config)
  t.equal(rotated.code, 0, rotated.stderr)
  t.equal(await tokenStatus(app, client.client_id, field(rotated.stdout, 'client_secret')), 200, 'a new secret works')
  const twice = await run('clients', ['forget-pepper'], config)
  t.equal(twice.code, 0)
  t.notMatch(twice.stdout, /nothing to forget/, 'the new pepper was recorded at start')
})

t.test('a snapshot of a server whose pepper is SECRET_PEPPER, restored: refused without it, the old secret works with it', async (t) => {
  const pepper = 'p'.repeat(43)
  const {
    made: client,
    backupOutput,
    restored: into,
  } = await backedUpAndRestored(t, testdir(t, {}), { config: { secretPepper: pepper }, env: { SECRET_PEPPER: pepper } }, (app) =>
    newClient(app, ['read:projects']),
  )
  t.match(backupOutput, /SECRET_PEPPER/, 'the backup says the pepper is not in it')
  const start = await refusedStart(into)
  t.equal(start.code, 78, 'restored without SECRET_PEPPER, the server stops with EX_CONFIG')
  t.match(start.stderr, `${join(into.dataDir, 'keys', 'secret-pepper')} is missing`)
  t.match(start.stderr, /set SECRET_PEPPER to the value it had/)
  t.notOk(existsSync(join(into.dataDir, 'keys', 'secret-pepper')), 'and made no pepper of its own')
  const app = await startedApp(t, { ...into, secretPepper: pepper })
  t.equal(await tokenStatus(app, client.client_id, client.client_secret), 200, 'with SECRET_PEPPER, the old secret authenticates')
})
