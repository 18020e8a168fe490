// The operator's command line (`studio <area> …`, scripts/studio.ts) as child processes, on the
// storage of a running test app.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { type Config, createConfig, projectRoot } from '../../config.js'
import { startedApp } from './app.js'
import { cliBundle } from './bundles.js'

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The CLI on the running app's storage: its data folder, or its PostgreSQL schema. */
export function run(
  script: 'clients' | 'catalogue' | 'webhooks' | 'leads' | 'email' | 'backup' | 'staff',
  args: string[],
  config: Config,
  extraEnv: Record<string, string> = {},
): Promise<Run> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: config.dataDir,
    LOG_LEVEL: 'silent',
    ...extraEnv,
  }
  if (config.databaseUrl) env.DATABASE_URL = config.databaseUrl
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      // backup's first argument says which of its two commands (backup, restore) runs.
      [cliBundle(), ...(script === 'backup' ? args : [script, ...args])],
      { cwd: projectRoot, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}

/** The value of a `name: value` line of a CLI's output. */
export const field = (out: string, name: string): string => {
  const m = new RegExp(`^${name}: (\\S+)$`, 'm').exec(out)
  if (!m?.[1]) throw new Error(`no ${name} in ${out}`)
  return m[1]
}

/**
 * A server of the embedded default (backups are of its SQLite folder) under `root`, started with
 * these keys from the environment (`config`, and `env` for the backup command), `before` run on it;
 * then stopped, backed up, and restored into a new data folder, whose configuration has none of
 * the keys. What `before` returned, the backup and restore commands' output, and the restored configuration.
 */
export async function backedUpAndRestored<T>(
  t: Test,
  root: string,
  keys: { config: Partial<Config>; env: Record<string, string> },
  before: (app: FastifyInstance) => Promise<T>,
): Promise<{ made: T; backupOutput: string; restoreOutput: string; restored: Config }> {
  const source = createConfig({ dataDir: join(root, 'source'), logLevel: 'silent', ...keys.config })
  const first = await startedApp(t, source)
  const made = await before(first)
  await first.close()
  const backup = await run('backup', ['backup', '--to', join(root, 'backups')], source, keys.env)
  t.equal(backup.code, 0, backup.stderr)
  const path = /^backup: (\S+)/m.exec(backup.stdout)?.[1] ?? ''
  const restored = createConfig({ dataDir: join(root, 'restored'), logLevel: 'silent' })
  const restore = await run('backup', ['restore', '--from', path], restored)
  t.equal(restore.code, 0, restore.stderr)
  return { made, backupOutput: backup.stdout + backup.stderr, restoreOutput: restore.stdout + restore.stderr, restored }
}
