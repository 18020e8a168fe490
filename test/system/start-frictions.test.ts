// How a start fails, and how `npm start` stops, as an operator meets them (issue 33):
//  - the whole configuration is checked before anything is created, and its error is the last line;
//  - a start that fails on a port never said it was listening;
//  - SIGINT to npm's own process stops the server like SIGTERM (npm runs the script with exec).
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig, projectRoot } from '../../config.js'
import { mcpBudgetNames } from '../../features/mcp/index.js'
import { TOOLS } from '../../handlers/tools/index.js'
import { AUTH_FAILURE_BUDGETS } from '../../plugins/auth/failures.js'
import { budgetNames } from '../../plugins/rate-limit/budgets.js'
import { spec } from '../helpers/app.js'
import { serverBundle } from '../helpers/bundles.js'
import { testdir } from '../helpers/folders.js'
import { freePort } from '../helpers/processes.js'

/** Runs the server to its end (it is expected to refuse to start); its exit code and output. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [serverBundle()], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (d) => {
    output += d
  })
  child.stderr.on('data', (d) => {
    output += d
  })
  const [code] = (await once(child, 'exit')) as [number | null]
  return { code, output }
}

const lastLine = (text: string): string => text.trimEnd().split('\n').pop() ?? ''

t.test('the budget names checked before start-up are exactly the budgets the plugins declare', async (t) => {
  const app = await buildApp(createConfig({ dataDir: join(testdir(t, {}), 'var'), logLevel: 'silent' }))
  t.teardown(() => app.close())
  await app.ready()
  t.same(
    budgetNames(spec.operations.values(), [...Object.keys(AUTH_FAILURE_BUDGETS), ...mcpBudgetNames(TOOLS)]),
    app.budgets.names(),
    'a plugin that declares a budget is named in app.ts early check',
  )
})

t.test('a RATE_LIMITS typo stops the server before the data folder or a client is made, its error last', async (t) => {
  const dataDir = join(testdir(t, {}), 'var')
  const port = await freePort()
  const res = await refusedStart({ DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: '0', RATE_LIMITS: 'getProject=5' })
  t.equal(res.code, 78, 'EX_CONFIG')
  t.notOk(existsSync(dataDir), 'no data folder was made')
  t.match(lastLine(res.output), /^studio-api: Invalid configuration: RATE_LIMITS names "getProject"/, 'the error is the last line')
  t.notMatch(res.output, /bootstrap client/i, 'no bootstrap client was made')
})

t.test('a bad JWT_PRIVATE_KEY is refused before the data folder is made', async (t) => {
  const dataDir = join(testdir(t, {}), 'var')
  const res = await refusedStart({ DATA_DIR: dataDir, PORT: String(await freePort()), METRICS_PORT: '0', JWT_PRIVATE_KEY: 'not a key' })
  t.equal(res.code, 78)
  t.notOk(existsSync(dataDir), 'no data folder was made')
  t.match(lastLine(res.output), /JWT_PRIVATE_KEY is not a PEM private key/)
})

t.test('a taken metrics port: the start fails naming METRICS_PORT, never having said it was listening', async (t) => {
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => taken.close())
  const metricsPort = (taken.address() as { port: number }).port
  const res = await refusedStart({
    DATA_DIR: join(testdir(t, {}), 'var'),
    PORT: String(await freePort()),
    METRICS_PORT: String(metricsPort),
  })
  t.equal(res.code, 1)
  t.notMatch(res.output, /"msg":"Server listening/, 'no "Server listening" line')
  t.match(
    lastLine(res.output),
    new RegExp(`port ${metricsPort} on 127\\.0\\.0\\.1 is already in use.*set METRICS_PORT`),
    'the reason is the last line',
  )
})

/** Resolves once nothing accepts connections on the port any more. */
async function portClosed(port: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  while (Date.now() < deadline) {
    const open = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      () => true,
      () => false,
    )
    if (!open) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

t.test('SIGINT to npm itself (not its process group) stops the server like SIGTERM', async (t) => {
  const port = await freePort()
  const dataDir = join(testdir(t, {}), 'var')
  const npm: ChildProcess = spawn('npm', ['start'], {
    cwd: projectRoot,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  npm.stdout?.on('data', (d) => {
    output += d
  })
  npm.stderr?.on('data', (d) => {
    output += d
  })
  t.teardown(() => {
    if (npm.exitCode === null) npm.kill('SIGKILL')
  })
  // npm start builds what is stale first: wait for the server, not a fixed time.
  const deadline = Date.now() + 240_000
  for (;;) {
    if (npm.exitCode !== null) throw new Error(`npm start ended with ${npm.exitCode}: ${output}`)
    const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
    if (up) break
    if (Date.now() > deadline) throw new Error(`the server did not answer: ${output}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  const exited = once(npm, 'exit')
  process.kill(npm.pid as number, 'SIGINT')
  t.ok(await portClosed(port, 20_000), 'the server stopped listening')
  await exited
  t.match(output, /shutting down: finishing in-flight requests/, 'gracefully, as on SIGTERM')
})
