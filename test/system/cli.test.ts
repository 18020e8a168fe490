// The operator CLIs (scripts/clients.ts, scripts/catalogue.ts) as child processes, against the
// data folder of an app that is running at the same time.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { readCatalogueFile } from '../../features/catalogue/index.js'
import { basic, call, spec, testApp, tokenFor } from '../helpers/app.js'
import { field, type Run, run } from '../helpers/cli.js'

// Each CLI call is a process of its own (tsx compiles the script first): the file's five dozen calls
// took 80–104 s in CI runs, and 120 s (the suite's limit per file) once on a busy machine.
t.setTimeout(300_000)

async function tokenRequest(app: FastifyInstance, id: string, secret: string) {
  return app.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(id, secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
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

t.test("clients: rotate ends the old secret's tokens within CLIENT_STATUS_TTL_SECONDS", async (t) => {
  const { app, config } = await testApp(t, { clientStatusTtlSeconds: 1 })
  const created = await run('clients', ['create', '--name', 'Rotating', '--scopes', 'read:projects'], config)
  const id = field(created.stdout, 'client_id')
  const oldToken = (await tokenRequest(app, id, field(created.stdout, 'client_secret'))).json().access_token as string
  const auth = (token: string) => ({ authorization: `Bearer ${token}` })
  t.equal(
    (await call(t, app, { url: '/project_metadata.json', headers: auth(oldToken) })).statusCode,
    200,
    'the token works (status cached)',
  )

  const rotated = await run('clients', ['rotate', id], config)
  t.equal(rotated.code, 0, rotated.stderr)
  t.match(rotated.stdout, /tokens issued with it stop within \d+ s/)
  const newToken = (await tokenRequest(app, id, field(rotated.stdout, 'client_secret'))).json().access_token as string
  t.equal((await call(t, app, { url: '/project_metadata.json', headers: auth(newToken) })).statusCode, 200, 'a new token works at once')

  await new Promise((r) => setTimeout(r, 1100))
  const old = await call(t, app, { url: '/project_metadata.json', headers: auth(oldToken) })
  t.equal(old.statusCode, 401, 'the token of the old secret is refused once the status TTL has passed')
  t.match(old.json().hint, /rotated/)
  t.equal((await call(t, app, { url: '/project_metadata.json', headers: auth(newToken) })).statusCode, 200, 'the new token still works')
})

t.test('the CLIs refuse to create a database the server is not using', async (t) => {
  // A data folder the server never started in (a typo in DATA_DIR, or one deleted under it).
  const { config } = await testApp(t, { databaseUrl: undefined })
  const elsewhere = { ...config, dataDir: join(config.dataDir, 'not-the-servers') }
  const [list, status, hooks, email] = (await Promise.all([
    run('clients', ['list'], elsewhere),
    run('catalogue', ['status'], elsewhere),
    run('webhooks', ['list'], elsewhere),
    run('email', ['status'], elsewhere),
  ])) as [Run, Run, Run, Run]
  for (const [name, res] of [
    ['clients list', list],
    ['catalogue status', status],
    ['webhooks list', hooks],
    ['email status', email],
  ] as const) {
    t.not(res.code, 0, `${name}: non-zero exit`)
    t.match(res.stderr, /there is no database at .*studio\.db/, `${name}: says there is no database`)
    t.match(res.stderr, /--new-database/, `${name}: says how to create one on purpose`)
  }
  t.notOk(existsSync(elsewhere.dataDir), 'nothing was created: not even the folder')

  // Asked explicitly, for a new installation set up before its first start: created.
  const created = await run('clients', ['create', '--name', 'Early', '--scopes', 'read:projects', '--new-database'], elsewhere)
  t.equal(created.code, 0, created.stderr)
  t.ok(existsSync(join(elsewhere.dataDir, 'studio.db')), 'the database exists now')
  const listed = await run('clients', ['list'], elsewhere)
  t.equal(listed.code, 0, listed.stderr)
  t.match(listed.stdout, /\tEarly\t/, 'and the CLI uses it from then on')
})

t.test('clients: bad command lines exit 64 (EX_USAGE), saying what is wrong and where the usage is', async (t) => {
  const { config } = await testApp(t)
  const cases: [string, string[], RegExp][] = [
    ['unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
    ['a misspelt command', ['rotat'], /unknown command 'rotat'\n\(Did you mean rotate\?\)/],
    ['no command', [], /Usage: studio clients \[options\] \[command\]/],
    ['create without --name', ['create', '--scopes', 'read:projects'], /create needs --name/],
    ['revoke without an id', ['revoke'], /missing required argument 'client_id'/],
    ['rotate without an id', ['rotate'], /missing required argument 'client_id'/],
    ['unknown option', ['list', '--verbose'], /unknown option '--verbose'/],
    ['a misspelt option', ['create', '--nme', 'X'], /unknown option '--nme'\n\(Did you mean --name\?\)/],
    ['an extra argument', ['list', 'everything'], /too many arguments/],
  ]
  // In parallel: each is a process start-up.
  const results = await Promise.all(cases.map(([, args]) => run('clients', args, config)))
  for (const [i, [name, , why]] of cases.entries()) {
    const res = results[i] as Run
    t.equal(res.code, 64, `${name}: exit 64`)
    t.match(res.stderr, /add --help for usage|Usage: studio clients/, `${name}: where the usage is, on stderr`)
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
  t.match(help.stdout, /Usage: studio clients \[options\] \[command\]/)
  t.match(help.stdout, /rotate <client_id>/, 'every command listed')
})

t.test('clients create-key: prints the key once, and says plainly that no operation accepts keys yet', async (t) => {
  const { app, config } = await testApp(t)
  const created = await run('clients', ['create-key', '--name', 'CRM sync', '--scopes', 'read:leads'], config)
  t.equal(created.code, 0, created.stderr)
  const key = field(created.stdout, 'api_key')
  t.match(key, /^sk_/)
  t.match(created.stdout, /no operation accepts API keys yet/)
  const refused = await call(t, app, { url: '/leads.json', headers: { 'x-api-key': key } })
  t.equal(refused.statusCode, 401, 'as it says: the key is accepted nowhere')
})

t.test('catalogue: status, unpublish and import while the app runs', async (t) => {
  const { app, config } = await testApp(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const auth = { authorization: `Bearer ${token}` }
  const shipped = readCatalogueFile(spec).length
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
  // (Not testdir(t): that would recreate this test's folder, the running app's data folder.)
  const dir = join(config.dataDir, 'fixtures')
  mkdirSync(dir)
  const projects = readCatalogueFile(spec)
  const broken = join(dir, 'broken.json')
  writeFileSync(broken, JSON.stringify([projects[0], { ...projects[1], location: { city: 'Nowhere' } }]))
  const refused = await run('catalogue', ['import', broken], config)
  t.not(refused.code, 0)
  t.match(refused.stderr, new RegExp(`project #2 \\(${projects[1]?.id}\\)`))
  // A project without images is named with the missing field (it once crashed reading images.map).
  const { images: _images, ...imageless } = projects[2] as (typeof projects)[number]
  const noImages = join(dir, 'no-images.json')
  writeFileSync(noImages, JSON.stringify([projects[0], imageless]))
  const named = await run('catalogue', ['import', noImages], config)
  t.equal(named.code, 1)
  t.match(named.stderr, new RegExp(`project #2 \\(${imageless.id}\\) /images is missing`), 'names the project and the field')
  t.notMatch(named.stderr, /Cannot read properties/)
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
  t.equal(bad.code, 64)
  t.match(bad.stderr, /unknown command 'publish'/)
  t.equal(none.code, 64)
  t.match(none.stderr, /Usage: studio catalogue/)
})
