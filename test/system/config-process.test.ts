// Configuration, as the server and the configuration module see it in a process of their own:
// loadConfig() reads the real environment; the built server refuses a bad configuration, naming
// the variable, before it touches any storage. (The rules themselves: test/app/config.test.ts.)
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { configBundle, serverBundle } from '../helpers/bundles.js'
import { testdir } from '../helpers/folders.js'

function node(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      args,
      { cwd: projectRoot, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0
        done({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

/** The built server with this environment. */
const server = (env: Record<string, string>) => node([serverBundle()], env)

t.test('loadConfig(env) reads only the env it is given', async (t) => {
  // A child process with variables set in its real environment: loadConfig({}) ignores them.
  const script = `import(${JSON.stringify(configBundle())}).then((m) => process.stdout.write(JSON.stringify([m.loadConfig({}), m.loadConfig().port])))`
  const res = await node(['-e', script], { PORT: '4321', LOG_LEVEL: 'debug', RATE_LIMITS: 'getProjects=5' })
  t.equal(res.code, 0, res.stderr)
  const [fromEmpty, fromProcess] = JSON.parse(res.stdout) as [{ port: number; logLevel: string; rateLimits: object }, number]
  t.equal(fromEmpty.port, 3000)
  t.equal(fromEmpty.logLevel, 'info')
  t.same(fromEmpty.rateLimits, {})
  t.equal(fromProcess, 4321, 'loadConfig() with no argument reads process.env')
})

t.test('the server process refuses a bad configuration, naming the variable', async (t) => {
  const dataDir = testdir(t, {})
  const port = await server({ PORT: 'abc', DATA_DIR: dataDir })
  t.not(port.code, 0, 'exits non-zero')
  t.not(port.code, null, 'exits by itself (not killed by the timeout)')
  t.match(port.stderr, /\bPORT\b/)
  t.notMatch(port.stdout, /studio-api ready/)
  t.notOk(existsSync(join(dataDir, 'studio.db')), 'touches no storage')

  const level = await server({ LOG_LEVEL: 'loud', PORT: '0', DATA_DIR: dataDir })
  t.not(level.code, 0)
  t.not(level.code, null)
  t.match(level.stderr, /\bLOG_LEVEL\b/)
})

t.test('a port in use: the server says which variable to change', async (t) => {
  const { createServer } = await import('node:net')
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())))
  const port = (taken.address() as { port: number }).port
  const res = await server({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: testdir(t, {}), LOG_LEVEL: 'silent' })
  t.equal(res.code, 1)
  t.match(res.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`))
  t.match(res.stderr, /set PORT to a free port/)
  t.notMatch(res.stderr, /EADDRINUSE|at Server\./, 'no raw error or stack')
})

t.test('TRUST_PROXY=true: the server refuses to start, showing the list form', async (t) => {
  const started = await server({ TRUST_PROXY: 'true', PORT: '0', METRICS_PORT: '0', DATA_DIR: testdir(t, {}) })
  t.equal(started.code, 78, 'the server refuses to start with TRUST_PROXY=true (EX_CONFIG)')
  t.match(started.stderr, /TRUST_PROXY=true would trust every X-Forwarded-For hop.*e\.g\. TRUST_PROXY=10\.0\.0\.0\/8,192\.168\.1\.5/)
})

t.test('RATE_LIMITS naming an unknown budget: the server stops with EX_CONFIG, naming it', async (t) => {
  const refused = await server({ RATE_LIMITS: 'submitLeadAnonymus=5', PORT: '0', DATA_DIR: testdir(t, {}) })
  t.equal(refused.code, 78, 'the server stops with EX_CONFIG')
  t.match(refused.stderr, /RATE_LIMITS names "submitLeadAnonymus"/)
})
