// Runs N instances of the API on one machine (node:cluster: the workers share the port).
//   CLUSTER_WORKERS=4 npm run cluster
// The primary prepares once what instances share (migrations, signing key, hash key, bootstrap
// client, catalogue), then forks; a worker that dies is replaced; SIGTERM/SIGINT drain every
// worker gracefully. For one rate-limit budget across workers set REDIS_URL; for several machines
// use PostgreSQL (DATABASE_URL) and share JWT_PRIVATE_KEY and SECRET_PEPPER.
import cluster from 'node:cluster'
import { availableParallelism } from 'node:os'
import { buildApp } from '../app.js'
import { loadConfig } from '../config.js'

async function primary(): Promise<void> {
  const config = loadConfig()
  const workers = Number(process.env.CLUSTER_WORKERS ?? availableParallelism())
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    throw new Error(`CLUSTER_WORKERS must be a whole number from 1 to 64, not "${process.env.CLUSTER_WORKERS}"`)
  }
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

if (cluster.isPrimary) {
  primary().catch((err: Error) => {
    process.stderr.write(`cluster: ${err.message}\n`)
    process.exit(1)
  })
} else {
  const { start } = await import('../server.js')
  await start()
}
