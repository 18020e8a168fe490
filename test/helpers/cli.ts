// The operator CLIs (scripts/<name>.ts) as child processes, on the storage of a running test app.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { type Config, projectRoot } from '../../config.js'

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The CLI on the running app's storage: its data folder, or its PostgreSQL schema. */
export function run(
  script: 'clients' | 'catalogue' | 'webhooks' | 'leads' | 'email' | 'backup',
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
      ['--import', 'tsx', join('scripts', `${script}.ts`), ...args],
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
