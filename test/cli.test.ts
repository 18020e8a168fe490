// The operator CLIs (scripts/clients.ts, scripts/catalogue.ts) as child processes, against the
// data folder of an app that is running at the same time.
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Config, projectRoot } from '../config.js'
import { readCatalogueFile } from '../plugins/catalogue.js'
import { basic, call, testApp, tokenFor } from './helpers/app.js'

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The CLI on the running app's storage: its data folder, or its PostgreSQL schema. */
function run(script: 'clients' | 'catalogue', args: string[], config: Config): Promise<Run> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: config.dataDir,
    LOG_LEVEL: 'silent',
  }
  if (config.databaseUrl) env.DATABASE_URL = config.databaseUrl
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join('scripts', `${script}.ts`), ...args],
      { cwd: projectRoot, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

async function tokenRequest(app: FastifyInstance, id: string, secret: string) {
  return app.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
}

const field = (out: string, name: string): string => {
  const m = new RegExp(`^${name}: (\\S+)$`, 'm').exec(out)
  if (!m?.[1]) throw new Error(`no ${name} in ${out}`)
  return m[1]
}

t.test('clients: create, list, rotate, revoke while the app runs', async (t) => {
  const { app, config } = await testApp(t)

  const created = await run('clients', ['create', '--name', 'Partner portal', '--scopes', 'read:projects,write:leads'], config)
  t.equal(created.code, 0, created.stderr)
  const id = field(created.stdout, 'client_id')
  const secret = field(created.stdout, 'client_secret')
  t.match(id, /^cl_/)
  t.ok(secret.length >= 40, 'a long random secret')
  t.match(created.stdout, /^scopes: read:projects write:leads$/m)

  const ok = await tokenRequest(app, id, secret)
  t.equal(ok.statusCode, 200, 'the new client gets a token from the running app')
  t.equal(ok.json().scope, 'read:projects write:leads')
  const projects = await call(t, app, { url: '/project_metadata.json', headers: { authorization: `Bearer ${ok.json().access_token}` } })
  t.equal(projects.statusCode, 200, 'and the token works')

  const list = await run('clients', ['list'], config)
  t.equal(list.code, 0, list.stderr)
  const line = list.stdout.split('\n').find((l) => l.startsWith(`${id}\t`))
  t.ok(line, 'list shows the client')
  t.match(line, /\tactive\tread:projects write:leads\tPartner portal\t/)
  t.notOk(list.stdout.includes(secret), 'list never shows a secret')
  t.ok(
    list.stdout.split('\n').some((l) => /\tbootstrap\t/.test(l)),
    'and the bootstrap client',
  )

  // Rotate: the old secret fails at once, the new one works.
  const rotated = await run('clients', ['rotate', id], config)
  t.equal(rotated.code, 0, rotated.stderr)
  t.equal(field(rotated.stdout, 'client_id'), id)
  const newSecret = field(rotated.stdout, 'client_secret')
  t.not(newSecret, secret)
  const old = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(old.statusCode, 401, 'the old secret fails')
  t.equal(old.json().code, 'invalid_client')
  const fresh = await tokenRequest(app, id, newSecret)
  t.equal(fresh.statusCode, 200, 'the new secret works')

  // Revoke: token requests fail at once.
  const revoked = await run('clients', ['revoke', id], config)
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(revoked.stdout, new RegExp(`revoked ${id}`))
  const after = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(id, newSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(after.statusCode, 401)
  t.equal(after.json().code, 'invalid_client')
  t.equal(after.json().error, 'invalid_client')
  t.equal(after.headers['www-authenticate'], 'Basic realm="studio-api"')
  const listed = await run('clients', ['list'], config)
  t.match(listed.stdout, new RegExp(`^${id}\\trevoked\\t`, 'm'))

  // Revoking or rotating again: an error naming the client, non-zero.
  const agains = await Promise.all(['revoke', 'rotate'].map((cmd) => run('clients', [cmd, id], config)))
  for (const [i, cmd] of ['revoke', 'rotate'].entries()) {
    const again = agains[i] as Run
    t.not(again.code, 0, `${cmd} of a revoked client fails`)
    t.match(again.stderr, new RegExp(`no active client ${id}`))
  }
  // A token of a client whose status the app has not yet cached is refused as soon as the
  // client is revoked (a cached status is trusted for at most CLIENT_STATUS_TTL_SECONDS).
  const second = await run('clients', ['create', '--name', 'Second', '--scopes', 'read:projects'], config)
  const secondId = field(second.stdout, 'client_id')
  const secondToken = (await tokenRequest(app, secondId, field(second.stdout, 'client_secret'))).json().access_token as string
  t.equal((await run('clients', ['revoke', secondId], config)).code, 0)
  const refused = await call(t, app, { url: '/project_metadata.json', headers: { authorization: `Bearer ${secondToken}` } })
  t.equal(refused.statusCode, 401, "the revoked client's token is refused")
  t.match(refused.json().hint, /revoked/)

  // Other clients are untouched.
  const other = await tokenFor(app, ['read:projects'])
  t.ok(other.token)
})

t.test('clients: bad command lines exit non-zero with the usage on stderr', async (t) => {
  const { config } = await testApp(t)
  const cases: [string, string[], RegExp][] = [
    ['unknown command', ['frobnicate'], /unknown command frobnicate/],
    ['no command', [], /no command/],
    ['create without --name', ['create', '--scopes', 'read:projects'], /create needs --name/],
    ['revoke without an id', ['revoke'], /revoke needs a client id/],
    ['rotate without an id', ['rotate'], /rotate needs a client id/],
    ['unknown option', ['list', '--verbose'], /verbose/],
  ]
  // In parallel: each is a process start-up.
  const results = await Promise.all(cases.map(([, args]) => run('clients', args, config)))
  for (const [i, [name, , why]] of cases.entries()) {
    const res = results[i] as Run
    t.not(res.code, 0, `${name}: non-zero exit`)
    t.match(res.stderr, /usage: npm run clients -- <command>/, `${name}: usage on stderr`)
    t.match(res.stderr, why, `${name}: says what is wrong`)
    t.notMatch(res.stdout, /client_secret/, `${name}: nothing created`)
  }
  const [badScope, help] = (await Promise.all([
    run('clients', ['create', '--name', 'X', '--scopes', 'admin:all'], config),
    run('clients', ['--help'], config),
  ])) as [Run, Run]
  t.not(badScope.code, 0)
  t.match(badScope.stderr, /unknown scope admin:all/)
  t.equal(help.code, 0)
  t.match(help.stdout, /usage: npm run clients/)
})

t.test('catalogue: status, unpublish and import while the app runs', async (t) => {
  const { app, config } = await testApp(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const auth = { authorization: `Bearer ${token}` }
  const shipped = readCatalogueFile().length
  const etag = (await call(t, app, { url: '/project_metadata.json', headers: auth })).headers.etag as string

  const status = await run('catalogue', ['status'], config)
  t.equal(status.code, 0, status.stderr)
  t.match(status.stdout, new RegExp(`^published ${shipped} projects at \\S+ \\(etag ${etag.slice(1, -1)}\\)`))

  const unpublished = await run('catalogue', ['unpublish'], config)
  t.equal(unpublished.code, 0, unpublished.stderr)
  t.match(unpublished.stdout, /unpublished/)
  await app.catalogue.refresh()
  const gone = await call(t, app, { url: '/project_metadata.json', headers: auth })
  t.equal(gone.statusCode, 404)
  t.equal(gone.json().code, 'not_found')
  t.match((await run('catalogue', ['status'], config)).stdout, /no catalogue published/)

  // A broken file is refused, naming the record, and publishes nothing.
  // (Not t.testdir(): that would recreate this test's folder, the running app's data folder.)
  const dir = join(config.dataDir, 'fixtures')
  mkdirSync(dir)
  const projects = readCatalogueFile()
  const broken = join(dir, 'broken.json')
  writeFileSync(broken, JSON.stringify([projects[0], { ...projects[1], location: { city: 'Nowhere' } }]))
  const refused = await run('catalogue', ['import', broken], config)
  t.not(refused.code, 0)
  t.match(refused.stderr, new RegExp(`project #2 \\(${projects[1]?.id}\\)`))
  await app.catalogue.refresh()
  t.equal((await call(t, app, { url: '/project_metadata.json', headers: auth })).statusCode, 404, 'still unpublished')

  const imported = await run('catalogue', ['import'], config)
  t.equal(imported.code, 0, imported.stderr)
  t.match(imported.stdout, new RegExp(`published ${shipped} projects`))
  await app.catalogue.refresh()
  const back = await call(t, app, { url: '/project_metadata.json', headers: auth })
  t.equal(back.statusCode, 200)
  t.equal((back.json() as unknown[]).length, shipped)
  t.equal(back.headers.etag, etag, 'the same catalogue has the same ETag')

  // A smaller file: a new version.
  const small = join(dir, 'small.json')
  writeFileSync(small, JSON.stringify(projects.slice(0, 4)))
  t.equal((await run('catalogue', ['import', small], config)).code, 0)
  await app.catalogue.refresh()
  const smaller = await call(t, app, { url: '/project_metadata.json', headers: auth })
  t.equal((smaller.json() as unknown[]).length, 4)
  t.not(smaller.headers.etag, etag)

  const [bad, none] = (await Promise.all([run('catalogue', ['publish'], config), run('catalogue', [], config)])) as [Run, Run]
  t.not(bad.code, 0)
  t.match(bad.stderr, /usage: npm run catalogue/)
  t.not(none.code, 0)
  t.match(none.stderr, /usage: npm run catalogue/)
})
