// Instances started together on a new database (a deployment that starts two at once, an
// operator publishing while an instance seeds): the bootstrap client is made once (configured,
// or generated: then only the start that made it writes its credentials file),
// publishes of the catalogue take turns, and neither start fails on the other's rows. Two server
// processes on a new PostgreSQL database failed so, 4 starts in 10 ("duplicate key value violates
// unique constraint clients_pkey", "projects_pkey"); here the same two steps run at once on one
// store, through its pool.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { CatalogueRepository } from '../../features/catalogue/repository.js'
import { bootstrapClient } from '../../plugins/auth/admin.js'
import { hashSecret } from '../../plugins/auth/secrets.js'
import { testApp } from '../helpers/app.js'

const quiet = { info: () => {} }

t.test('two bootstraps of the configured client at once: both go on, one client', async (t) => {
  const { app, config } = await testApp(t)
  const configured = {
    dataDir: config.dataDir,
    bootstrapClientId: 'cl_together',
    bootstrapClientSecret: randomBytes(32).toString('base64url'),
  }
  const before = (await app.auth.admin.clients.list()).map((c) => c.id)
  const results = await Promise.allSettled([1, 2, 3].map(() => bootstrapClient(quiet, configured, app.auth.admin)))
  t.same(
    results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status)),
    ['fulfilled', 'fulfilled', 'fulfilled'],
    'none fails',
  )
  const made = (await app.auth.admin.clients.list()).map((c) => c.id).filter((id) => !before.includes(id))
  t.same(made, ['cl_together'], 'one client made, the configured one')
})

t.test('three first starts generating their client at once: one client, and its file holds its secret', async (t) => {
  const { app, config } = await testApp(t)
  const admin = app.auth.admin
  await app.store.db.deleteFrom('clients').execute() // a new database: no client yet
  // Each start's own data folder (instances on machines of their own).
  const dirs = [1, 2, 3].map((i) => mkdirSync(join(config.dataDir, `start-${i}`), { recursive: true }) ?? '')
  const results = await Promise.allSettled(
    dirs.map((dataDir) => bootstrapClient(quiet, { dataDir, bootstrapClientId: undefined, bootstrapClientSecret: undefined }, admin)),
  )
  t.same(
    results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status)),
    ['fulfilled', 'fulfilled', 'fulfilled'],
    'none fails',
  )
  const clients = await admin.clients.list()
  t.equal(clients.length, 1, 'one client made')
  const files = dirs.map((d) => join(d, 'bootstrap-client.json')).filter((f) => existsSync(f))
  t.equal(files.length, 1, 'one start wrote a credentials file')
  const creds = JSON.parse(readFileSync(files[0] ?? '', 'utf8')) as { client_id: string; client_secret: string }
  t.equal(creds.client_id, clients[0]?.id, 'the file names the client made')
  t.equal(hashSecret(admin.pepper, creds.client_secret), clients[0]?.secret_hash, 'and holds its secret')
})

t.test('two publishes of the catalogue at once: both go on, and the catalogue is one of them whole', async (t) => {
  const { app } = await testApp(t)
  const repo = new CatalogueRepository(app.store.db, app.store.dialect)
  const first = [{ id: 'p-a' }, { id: 'p-b' }]
  const second = [{ id: 'p-b' }, { id: 'p-c' }]
  for (let round = 0; round < 5; round++) {
    const results = await Promise.allSettled([repo.publish(first, '2026-11-25T00:00:00Z'), repo.publish(second, '2026-11-25T00:00:01Z')])
    t.same(
      results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status)),
      ['fulfilled', 'fulfilled'],
      `round ${round}: none fails`,
    )
    const ids = (((await repo.current())?.projects ?? []) as { id: string }[]).map((p) => p.id).join(',')
    t.ok(ids === 'p-a,p-b' || ids === 'p-b,p-c', `round ${round}: one catalogue whole (${ids})`)
  }
})
