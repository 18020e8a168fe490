// SQLite opened by several processes at once (the store contract itself, on both backends:
// test/app/store.test.ts): three processes starting together on a fresh file all open it and
// migrate once.
import { spawn } from 'node:child_process'
import t from 'tap'
import { createConfig, projectRoot } from '../../config.js'
import { openStore } from '../../plugins/store/open.js'
import { testdir } from '../helpers/folders.js'
import { EXPECTED_MIGRATIONS as MIGRATIONS } from '../helpers/migrations.js'

// Without the cross-process lock this fails ("table clients already exists"): the processes
// wait for one agreed instant, so their migrations really overlap.

t.test('three processes starting together on a fresh SQLite file all open it and migrate once', async (t) => {
  const dir = testdir(t, {
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
    MIGRATIONS,
  )
})
