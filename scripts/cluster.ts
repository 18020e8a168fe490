// `studio cluster`: runs CLUSTER_WORKERS instances of the API on one machine (node:cluster: the
// workers share the port). The primary prepares once what instances share (migrations, signing
// key, hash key, bootstrap client, catalogue), then forks; a worker that dies is replaced;
// SIGTERM/SIGINT drain every worker gracefully. For one rate-limit budget across workers set
// REDIS_URL; for several machines use PostgreSQL (DATABASE_URL) and share JWT_PRIVATE_KEY and
// SECRET_PEPPER (docs/scaling-out.md).
import cluster from 'node:cluster'
import type { Command } from 'commander'
import { buildApp } from '../app.js'
import { loadConfig } from '../config.js'
import { act, command } from './cli.js'

async function primary(): Promise<void> {
  const config = loadConfig()
  const workers = config.clusterWorkers
  const prepared = await buildApp(config, { logger: { level: config.logLevel } })
  await prepared.ready()
  await prepared.close()

  let stopping = false
  const fork = () => cluster.fork()
  for (let i = 0; i < workers; i++) fork()
  process.stderr.write(`cluster: ${workers} workers on port ${config.port}\n`)
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return
    process.stderr.write(`cluster: worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`)
    setTimeout(fork, 500)
  })
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    process.stderr.write(`cluster: ${signal}, draining workers\n`)
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal)
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

/** Runs until the primary is stopped: the returned promise never settles in a running cluster. */
async function runCluster(): Promise<number> {
  if (cluster.isPrimary) {
    await primary()
  } else {
    const { start } = await import('../server.js')
    await start()
  }
  // Keep the command line from exiting: the process ends when its workers (or its server) do.
  return new Promise<number>(() => {})
}

export function clusterCommand(): Command {
  return command(
    'cluster',
    'run CLUSTER_WORKERS instances of the API on this machine, sharing the port (configured like the server: docs/configuration.md)',
    'several instances on this machine',
  ).action(act(runCluster))
}
