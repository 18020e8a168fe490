// `npm start` as a user runs it, on a copy of the project (its node_modules linked), so the build it
// makes never touches the dist/ other tests read: the first start builds what is missing (tsc, the
// server bundle, the spec, the agent apps) and serves; the second builds nothing. The bundle is
// what answers: the docs page with Swagger UI's own files, a token, the catalogue, a real MCP client
// reading an app (the SDK is loaded on demand inside the bundle), and a clean stop on SIGTERM.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { projectRoot } from '../config.js'
import { connect } from './helpers/mcp.js'
import { type ServerProcess, startServer, tokenFrom } from './helpers/processes.js'

t.setTimeout(600_000)

/** The project's tracked files (and the generated types) copied to `dir`, node_modules linked. */
function copyProject(dir: string): void {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: projectRoot, encoding: 'utf8' }).split('\0').filter(Boolean)
  for (const file of files) {
    if (!existsSync(join(projectRoot, file))) continue
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    cpSync(join(projectRoot, file), join(dir, file))
  }
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')
}

/** `node scripts/start.mjs` (what `npm start` runs) in `dir`, until /healthz answers. */
function npmStart(t: Test, dir: string, dataDir: string): Promise<ServerProcess> {
  return startServer(t, { DATA_DIR: dataDir, LOG_LEVEL: 'info' }, { args: ['scripts/start.mjs'], cwd: dir, withinMs: 480_000 })
}

t.test('npm start: the first start builds and serves from the bundle; the second builds nothing', async (t) => {
  const dir = t.testdir({})
  copyProject(dir)
  const dataDir = join(dir, 'var')

  const first = await npmStart(t, dir, dataDir)
  t.match(first.output(), /building server \(TypeScript, then one bundle\)/, 'the first start builds the server')
  t.ok(existsSync(join(dir, 'dist', 'server.bundle.js')), 'into one bundle')

  const docs = await fetch(`${first.url}/docs`, { headers: { accept: 'text/html' } })
  t.equal(docs.status, 200, 'the docs page')
  const asset = await fetch(`${first.url}/docs/static/swagger-ui.css`)
  t.equal(asset.status, 200, "Swagger UI's own files, served from its package")

  const creds = JSON.parse(readFileSync(join(dataDir, 'bootstrap-client.json'), 'utf8')) as { client_id: string; client_secret: string }
  const access_token = await tokenFrom(first.url, creds.client_id, creds.client_secret, 'read:projects')
  t.ok(access_token, 'a token for the bootstrap client')
  const projects = await fetch(`${first.url}/project_metadata.json`, { headers: { authorization: `Bearer ${access_token}` } })
  t.equal(projects.status, 200, 'the catalogue')
  t.ok(((await projects.json()) as unknown[]).length > 0, 'with projects')

  const client = await connect(t, first.url, null)
  const tools = await client.listTools()
  t.ok(
    tools.tools.some((tool) => tool.name === 'show_playbook'),
    'a real MCP client lists the tools',
  )
  const playbook = (await client.listResources()).resources.find((r) => r.uri.endsWith('/playbook'))
  t.match(playbook?.uri, /^ui:\/\/[^/]+\/playbook$/, 'the playbook app is listed')
  const view = await client.readResource({ uri: String(playbook?.uri) })
  t.match(String((view.contents[0] as { text?: string }).text), /<html/i, 'and reads an app')
  await client.close()

  t.equal(await first.stop(), 0, 'SIGTERM: a clean stop')
  // The log is written in batches; all of it is out once the process has ended.
  t.match(first.output(), /"msg":"studio-api ready"/, 'it had said it was ready')

  const second = await npmStart(t, dir, dataDir)
  t.notMatch(second.output(), /building/, 'the second start builds nothing')
  t.equal((await fetch(`${second.url}/healthz`)).status, 200, 'and answers')
  t.equal(await second.stop(), 0)
})
