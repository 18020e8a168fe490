// The store contract: one suite, run against both backends (the embedded SQLite default and
// PostgreSQL in a fresh schema), so the repositories mean the same thing on both.
import { spawn } from 'node:child_process'
import t, { type Test } from 'tap'
import { createConfig, projectRoot } from '../config.js'
import { openStore } from '../plugins/store/open.js'
import { freshSchemaUrl } from './helpers/app.js'
import { requirePart } from './helpers/processes.js'

const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

async function pgReachable(): Promise<boolean> {
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: PG_BASE, connectionTimeoutMillis: 2000 })
  try {
    await c.connect()
    await c.end()
    return true
  } catch {
    return false
  }
}

type StoreConfig = Parameters<typeof openStore>[0]

/** Each backend gives the configuration of a fresh store (undefined: not available here). */
const backends: { name: string; config: (t: Test) => Promise<StoreConfig | undefined> }[] = [
  {
    name: 'sqlite',
    config: async (t) => createConfig({ dataDir: t.testdir({}) }),
  },
  {
    name: 'postgres',
    config: async (t) => {
      if (
        !requirePart(
          t,
          await pgReachable(),
          `PostgreSQL at ${new URL(PG_BASE).host}`,
          'start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
        )
      )
        return undefined
      return createConfig({ dataDir: t.testdir({}), databaseUrl: await freshSchemaUrl(t, PG_BASE) })
    },
  },
]

const at = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString()
const lead = (id: string, s = 0, client: string | null = 'cl_a') => ({
  id,
  name: `Name ${id}`,
  email: `${id}@example.com`,
  phone: '+44 20 7946 0000',
  received_at: at(s),
  client_id: client,
})

for (const backend of backends) {
  t.test(`store contract: ${backend.name}`, async (t) => {
    const config = await backend.config(t)
    if (!config) return
    const store = await openStore(config)
    t.teardown(() => store.close())
    t.equal(store.dialect, backend.name)

    t.test('ping and migrations are idempotent: reopening migrates nothing and keeps the data', async (t) => {
      await store.ping()
      const migrated = await store.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.same(
        migrated.map((r) => (r as { name: string }).name),
        ['001_initial'],
        'the versioned migrations applied',
      )
      await store.clients.create({
        id: 'cl_keep',
        name: 'K',
        scopes: 'read:leads',
        secret_hash: '1'.repeat(64),
        created_at: at(0),
        revoked_at: null,
      })
      const again = await openStore(config)
      t.teardown(() => again.close())
      await again.ping()
      const after = await again.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.equal(after.length, 1, 'reopening applied no migration twice')
      t.match(await again.clients.find('cl_keep'), { name: 'K' }, 'reopening kept the data')
      await store.db.deleteFrom('clients').where('id', '=', 'cl_keep').execute()
    })

    t.test('instances starting together on an empty database migrate once', async (t) => {
      const fresh = await backend.config(t)
      if (!fresh) return
      const stores = await Promise.all([openStore(fresh), openStore(fresh), openStore(fresh)])
      t.teardown(() => Promise.all(stores.map((s) => s.close())))
      const applied = await stores[0]?.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.same(
        applied?.map((r) => (r as { name: string }).name),
        ['001_initial'],
        'one migration row, though three instances raced',
      )
      for (const s of stores) await s.ping()
    })

    t.test('clients: create, find, list, rotate, revoke', async (t) => {
      await store.clients.create({
        id: 'cl_a',
        name: 'A',
        scopes: 'read:leads',
        secret_hash: 'a'.repeat(64),
        created_at: at(1),
        revoked_at: null,
      })
      await store.clients.create({
        id: 'cl_b',
        name: 'B',
        scopes: 'write:leads read:projects',
        secret_hash: 'b'.repeat(64),
        created_at: at(2),
        revoked_at: null,
      })
      t.equal(await store.clients.count(), 2)
      t.match(await store.clients.find('cl_b'), { id: 'cl_b', scopes: 'write:leads read:projects', revoked_at: null })
      t.equal(await store.clients.find('nope'), undefined)
      t.same(
        (await store.clients.list()).map((c) => c.id),
        ['cl_a', 'cl_b'],
      )
      t.equal(await store.clients.rotate('cl_a', 'c'.repeat(64)), true)
      t.equal((await store.clients.find('cl_a'))?.secret_hash, 'c'.repeat(64))
      t.equal(await store.clients.revoke('cl_a', at(3)), true)
      t.equal(await store.clients.revoke('cl_a', at(4)), false, 'revoking twice changes nothing')
      t.equal(await store.clients.rotate('cl_a', 'd'.repeat(64)), false, 'a revoked client cannot be rotated')
      t.equal((await store.clients.find('cl_a'))?.revoked_at, at(3))
      await t.rejects(
        store.clients.create({ id: 'cl_b', name: 'dup', scopes: '', secret_hash: 'e'.repeat(64), created_at: at(5), revoked_at: null }),
        'ids are unique',
      )
    })

    t.test('api keys: create, find by hash, revoke', async (t) => {
      await store.clients.createApiKey({
        id: 'key_1',
        name: 'K',
        scopes: 'read:leads',
        key_hash: 'f'.repeat(64),
        created_at: at(1),
        revoked_at: null,
      })
      t.match(await store.clients.findApiKeyByHash('f'.repeat(64)), { id: 'key_1', scopes: 'read:leads' })
      t.equal(await store.clients.findApiKeyByHash('0'.repeat(64)), undefined)
      t.equal(await store.clients.revokeApiKey('key_1', at(2)), true)
      t.equal((await store.clients.listApiKeys())[0]?.revoked_at, at(2))
    })

    t.test('leads: batches, commit order, paging, idempotency claims', async (t) => {
      const none = await store.leads.insertBatch([lead('l1', 1), lead('l2', 2, null)], new Map(), at(0))
      t.equal(none.size, 0)
      await store.leads.insertBatch([lead('l3', 3)], new Map(), at(0))
      t.equal(await store.leads.count(), 3)
      const all = await store.leads.page(0, 10)
      t.same(
        all.map((l) => l.id),
        ['l1', 'l2', 'l3'],
        'commit order',
      )
      t.equal(all[1]?.client_id, null)
      t.same(all[0], { ...lead('l1', 1), seq: all[0]?.seq }, 'rows come back as stored')
      const s1 = await store.leads.seqOf('l1')
      t.same(
        (await store.leads.page(s1 ?? 0, 1)).map((l) => l.id),
        ['l2'],
        'keyset page after l1',
      )
      t.equal(await store.leads.seqOf('missing'), undefined)

      // Idempotency: the first claim of a key wins; a second live claim loses and stores nothing.
      const claim = (leadId: string, key: string, hash: string, s: number) => ({
        owner: 'client:cl_a',
        key,
        body_hash: hash,
        lead_id: leadId,
        created_at: at(s),
      })
      const won = await store.leads.insertBatch([lead('l4', 10)], new Map([['l4', claim('l4', 'k1', 'h1', 10)]]), at(0))
      t.equal(won.size, 0)
      const lost = await store.leads.insertBatch([lead('l5', 11)], new Map([['l5', claim('l5', 'k1', 'h2', 11)]]), at(0))
      t.same([...lost], ['l5'], 'a live key is not claimed twice')
      t.equal(await store.leads.seqOf('l5'), undefined, 'the losing lead was not stored')
      t.match(await store.leads.findIdempotency('client:cl_a', 'k1', at(0)), { body_hash: 'h1', lead_id: 'l4', received_at: at(10) })
      // An expired key (created before the cutoff) is claimed again.
      const again = await store.leads.insertBatch([lead('l6', 30)], new Map([['l6', claim('l6', 'k1', 'h3', 30)]]), at(20))
      t.equal(again.size, 0, 'an expired key is reclaimed')
      t.match(await store.leads.findIdempotency('client:cl_a', 'k1', at(20)), { body_hash: 'h3', lead_id: 'l6' })
      t.equal(await store.leads.findIdempotency('client:cl_a', 'k1', at(31)), undefined, 'past the window the key is gone')
      t.equal(await store.leads.sweepIdempotency(at(31)), 1)

      // A failing batch stores nothing at all (atomic).
      await t.rejects(store.leads.insertBatch([lead('l7', 40), lead('l1', 41)], new Map(), at(0)), 'duplicate id fails the batch')
      t.equal(await store.leads.seqOf('l7'), undefined, 'no part of a failed batch is visible')
    })

    t.test('catalogue: publish replaces whole, etag follows content, unpublish', async (t) => {
      t.equal(await store.catalogue.current(), undefined)
      const e1 = await store.catalogue.publish([{ id: 'a' }, { id: 'b' }], at(1))
      t.equal(await store.catalogue.currentEtag(), e1)
      t.same((await store.catalogue.current())?.projects, [{ id: 'a' }, { id: 'b' }])
      const e2 = await store.catalogue.publish([{ id: 'b' }], at(2))
      t.not(e2, e1)
      t.same((await store.catalogue.current())?.projects, [{ id: 'b' }])
      t.equal(await store.catalogue.publish([{ id: 'a' }, { id: 'b' }], at(3)), e1, 'same content, same etag')
      t.equal(await store.catalogue.publish([], at(4)), undefined)
      t.equal(await store.catalogue.current(), undefined)
    })
  })
}

// Without the cross-process lock this fails ("table clients already exists"): the processes
// wait for one agreed instant, so their migrations really overlap.
t.test('three processes starting together on a fresh SQLite file all open it and migrate once', async (t) => {
  const dir = t.testdir({
    'open.mts': `import { openStore } from ${JSON.stringify(`${projectRoot}/plugins/store/open.ts`)}
// Start together: every process waits for the same instant before it opens the store.
await new Promise((r) => setTimeout(r, Number(process.argv[3]) - Date.now()))
const store = await openStore({ dataDir: process.argv[2], databaseUrl: undefined, dbPoolMax: 1 })
await store.close()
`,
  })
  const dataDir = `${dir}/data`
  const startAt = String(Date.now() + 2000)
  const exits = await Promise.all(
    [1, 2, 3].map(
      () =>
        new Promise<{ code: number | null; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, ['--import', 'tsx', `${dir}/open.mts`, dataDir, startAt], { cwd: projectRoot })
          let stderr = ''
          child.stderr.on('data', (d) => {
            stderr += d
          })
          child.on('exit', (code) => resolve({ code, stderr }))
        }),
    ),
  )
  t.same(
    exits.map((e) => e.code),
    [0, 0, 0],
    `every process opened the store${exits.some((e) => e.code !== 0) ? `: ${exits.map((e) => e.stderr).join(' | ')}` : ''}`,
  )
  const store = await openStore(createConfig({ dataDir }))
  t.teardown(() => store.close())
  const applied = await store.db
    .selectFrom('kysely_migration' as never)
    .select('name' as never)
    .execute()
  t.same(
    applied.map((r) => (r as { name: string }).name),
    ['001_initial'],
  )
})
