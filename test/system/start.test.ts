// `npm start` as a user runs it (npm itself, on a copy of the project with its node_modules
// linked, so the build it makes never touches the dist/ other tests read): the first start builds
// what is missing from the sources, without tsc (the copy carries a type error that tsc would
// refuse), and serves; the second builds nothing. The bundle is what answers: the docs page with
// Swagger UI's own files, a token, the catalogue, a real MCP client reading an app (the SDK is
// loaded on demand inside the bundle). Stopping npm stops the server: a SIGTERM to npm (which a
// supervisor sends) and even a SIGKILL leave no server holding the port.
import { execFileSync } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs'
import { createConnection } from 'node:net'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { projectRoot } from '../../config.js'
import { testdir } from '../helpers/folders.js'
import { connect } from '../helpers/mcp.js'
import { alive, type ServerProcess, startServer, tokenFrom } from '../helpers/processes.js'

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

/** npm's own program, run by this Node: the child process is npm itself, as under a supervisor. */
const npmCli = realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())

/** `npm start` in `dir`, until /healthz answers. */
function npmStart(t: Test, dir: string, dataDir: string): Promise<ServerProcess> {
  return startServer(t, { DATA_DIR: dataDir, LOG_LEVEL: 'info' }, { args: [npmCli, 'start'], cwd: dir, withinMs: 480_000 })
}

/**
 * The pid of the server process, from its ready line (npm and npm's shell sit between). The log is
 * written in batches, at least every second: the line may follow the first answer.
 */
async function serverPid(server: ServerProcess): Promise<number> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const pid = /"pid":(\d+)[^\n]*"msg":"studio-api ready"/.exec(server.output())?.[1]
    if (pid) return Number(pid)
    if (Date.now() > deadline) throw new Error(`no ready line: ${server.output()}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** Whether something accepts connections on the port. */
const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

/** Waits (generously: the machine may be loaded) until the server process is gone and its port is free. */
async function gone(pid: number, port: number): Promise<boolean> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (!alive(pid) && !(await listening(port))) return true
    await new Promise((r) => setTimeout(r, 250))
  }
  return false
}

t.test(
  'npm start: the first start builds from the sources without tsc and serves from the bundle; the second builds nothing',
  async (t) => {
    const dir = testdir(t, {})
    copyProject(dir)
    // A type error tsc refuses (TS2322) in code the server runs: a type-checking build would stop.
    appendFileSync(
      join(dir, 'plugins', 'health', 'index.ts'),
      "\nexport const typeErrorOnPurpose: number = 'not a number' as unknown as string\n",
    )
    const dataDir = join(dir, 'var')

    const first = await npmStart(t, dir, dataDir)
    t.match(first.output(), /building server bundle/, 'the first start builds the server')
    t.ok(existsSync(join(dir, 'dist', 'server.bundle.js')), 'into one bundle')
    t.notOk(existsSync(join(dir, 'dist', 'server.js')), 'tsc wrote nothing (its dist/server.js)')
    t.notOk(existsSync(join(dir, 'dist', 'app.js')), 'tsc wrote nothing (its dist/app.js)')
    t.notMatch(first.output(), /error TS\d+/, 'and said nothing')
    // Every file the bundle starts a worker thread from (new URL('./x.js', import.meta.url)) was
    // built beside it: a thread of a feature that is off by default (scheduled backups) included.
    const bundles = readdirSync(join(dir, 'dist')).filter((f) => /^(server\.bundle|chunk-[A-Z0-9]+)\.js$/.test(f))
    const threads = new Set(
      bundles.flatMap((f) => [...readFileSync(join(dir, 'dist', f), 'utf8').matchAll(/new URL\("\.\/([\w-]+\.js)"/g)].map((m) => m[1])),
    )
    t.ok(threads.has('sqlite-thread.js') && threads.has('backup-thread.js'), `the bundle starts its threads from files: ${[...threads]}`)
    for (const file of threads) t.ok(existsSync(join(dir, 'dist', file as string)), `dist/${file} is built`)

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

    // A supervisor stops the service: SIGTERM to npm, the process it started.
    const pid = await serverPid(first)
    first.child.kill('SIGTERM')
    t.ok(await gone(pid, first.port), 'SIGTERM to npm: the server process ends and its port is free')
    t.match(first.output(), /"msg":"studio-api ready"/, 'it had said it was ready')
    t.match(
      first.output(),
      /"signal":"SIGTERM","msg":"shutting down: finishing in-flight requests"|has ended; shutting down/,
      'and said why it stopped (the signal npm passed on, or its launcher saw npm end)',
    )

    const second = await npmStart(t, dir, dataDir)
    t.notMatch(second.output(), /building/, 'the second start builds nothing')
    t.equal((await fetch(`${second.url}/healthz`)).status, 200, 'and answers')
    // No chance for npm to pass anything on: the server still notices that npm is gone.
    const pid2 = await serverPid(second)
    second.child.kill('SIGKILL')
    t.ok(await gone(pid2, second.port), 'SIGKILL to npm: the server process ends and its port is free')

    // Without npm (as a supervisor should run it, or node dist/server.bundle.js): SIGTERM, exit 0.
    const direct = await startServer(
      t,
      { DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      { args: ['scripts/start.mjs'], cwd: dir, withinMs: 480_000 },
    )
    t.equal(await direct.stop(), 0, 'node scripts/start.mjs: SIGTERM, a clean stop')
    t.notOk(await listening(direct.port), 'the port is free')
  },
)
