// The README's typed client, for real: types generated with openapi-typescript from a running
// server's /openapi.json, the example (test/typed-client/example.ts) and the README's own snippet
// type-checked against them with tsc, then run with openapi-fetch against that server: the token
// call and every operation, and the snippet as a reader runs it (an ES module, npx tsx).
import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import openapiTS, { astToString } from 'openapi-typescript'
import t from 'tap'
import { tsImport } from 'tsx/esm/api'
import { projectRoot } from '../../config.js'
import { newClient } from '../helpers/app.js'
import { live } from '../helpers/mcp.js'

const run = promisify(execFile)

/** The getting-started page's typed-client snippet: the ts block after its marker comment. */
function readmeSnippet(): string {
  const readme = readFileSync(join(projectRoot, 'docs', 'getting-started.md'), 'utf8')
  const marker = readme.indexOf('<!-- typed-client example:')
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker))
  if (marker < 0 || !block?.[1]) throw new Error('docs/getting-started.md has no typed-client example block after its marker')
  return block[1]
}

t.test('a consumer generates types from /openapi.json and calls every operation with openapi-fetch', async (t) => {
  const { app, base } = await live(t)
  const client = await newClient(app, ['read:projects', 'write:leads', 'read:leads'])

  // Inside the project (test-artifacts/ is ignored), so the example resolves openapi-fetch.
  const dir = join(projectRoot, 'test-artifacts', `typed-client-${process.pid}`)
  mkdirSync(dir, { recursive: true })
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const types = astToString(await openapiTS(new URL(`${base}/openapi.json`)))
  writeFileSync(join(dir, 'studio-api.ts'), types)
  copyFileSync(join(projectRoot, 'test', 'typed-client', 'example.ts'), join(dir, 'example.ts'))
  writeFileSync(join(dir, 'client.mts'), readmeSnippet())
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        lib: ['ES2022', 'DOM'],
        types: ['node'],
      },
      files: ['example.ts', 'client.mts'],
    }),
  )
  const tsc = await run(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir]).then(
    () => ({ code: 0, out: '' }),
    (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
  )
  t.equal(tsc.code, 0, `the example and the README's snippet type-check against the generated types ${tsc.out}`)

  // Typed loosely here: the example's own types exist only once generated (above). TypeScript
  // written at run time: loaded through tsx, as a consumer's own toolchain would compile it.
  const { walkthrough } = (await tsImport(join(dir, 'example.ts'), import.meta.url)) as {
    walkthrough: (base: string, id: string, secret: string) => Promise<Record<string, unknown> & { receipt?: { id: string } }>
  }
  const result = await walkthrough(base, client.client_id, client.client_secret)
  t.equal(result.scope, 'read:projects write:leads read:leads')
  t.equal(result.issuer, base)
  t.equal(result.keys, 1)
  t.same(
    result.projects,
    app.catalogue.current()?.projects.map((p) => p.title),
  )
  t.equal(result.notModified, 304)
  t.match(result.receipt, { status: 'received' })
  t.match(result.log, [{ id: result.receipt?.id, name: 'Ada Lovelace' }])

  // The README's snippet, as a reader runs it.
  const snippet = await run(process.execPath, ['--import', 'tsx', join(dir, 'client.mts')], {
    cwd: dir,
    env: { ...process.env, CLIENT_ID: client.client_id, CLIENT_SECRET: client.client_secret, BASE: base },
  })
  t.match(
    snippet.stdout,
    new RegExp(`^${app.catalogue.current()?.projects.length} \\{`),
    "the README's snippet: the projects, then the receipt",
  )
  t.match(snippet.stdout, /status: 'received'/)
})
