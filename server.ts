// The process: configuration, logger, signals, listeners (the API's, and the metrics' own on
// METRICS_PORT). Everything else is buildApp().
// `node dist/server.js` runs it; scripts/start.mjs (npm start) and the cluster workers call start().
import { realpathSync } from 'node:fs'
import { basename } from 'node:path'
import { fileURLToPath } from 'node:url'
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { listenMetrics, type MetricsListener } from './plugins/metrics/listener.js'

export interface StartOptions {
  /**
   * Benchmark only (bench/baselines/no-fsync-server.ts prices durability with it): SQLite commits without
   * fsync. No configuration variable reaches it, so a deployed server cannot be started this way.
   */
  unsafeNoFsync?: boolean
}

/** How long a SIGTERM waits for in-flight requests and the plugins' closing before exiting with 1. */
const CLOSE_DELAY_MS = 10_000

/** `process.getActiveResourcesInfo()` as counts per kind: what keeps the process busy. */
function countResources(kinds: string[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const kind of kinds) out[kind] = (out[kind] ?? 0) + 1
  return out
}

/**
 * Writes out the log lines still buffered (the logger batches its writes), so that a start that
 * fails ends with its reason, not with lines logged before it. Set once the logger exists.
 */
let flushLogs: () => void = () => {}

/** A configuration mistake stops the process with its message and EX_CONFIG, at any stage of start-up. */
function refuseConfig(err: unknown): void {
  if (err instanceof ConfigError) {
    flushLogs()
    process.stderr.write(`studio-api: ${err.message}\n`)
    process.exit(78) // EX_CONFIG
  }
}

async function main(options: StartOptions): Promise<void> {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig()
  } catch (err) {
    refuseConfig(err)
    throw err
  }

  // Log lines are written in batches of up to 4 KiB, and at least every second, so a quiet
  // server's lines still show promptly; everything left is flushed on exit.
  const logDestination = pino.destination({ sync: false, minLength: 4096 })
  setInterval(() => logDestination.flush(), 1000).unref()
  process.on('exit', () => logDestination.flushSync())
  flushLogs = () => logDestination.flushSync()
  const app = await buildApp(config, {
    // No redaction pass: nothing logs headers, bodies or credentials in the first place (request-log
    // writes a fixed set of fields; test/app/logs.test.ts checks a full run), and pino's wildcard
    // redaction would copy every log line.
    // Buffered writes (4 KiB) instead of one write per line: flushed on close and on exit.
    logger: { level: config.logLevel, stream: logDestination },
    ...(options.unsafeNoFsync && { unsafeNoFsync: true }),
  })

  let metrics: MetricsListener | undefined
  const closeAll = () => Promise.all([app.close(), metrics?.close()])
  closeWithGrace(
    {
      delay: CLOSE_DELAY_MS,
      // What the shutdown still waited for, so that an operator (or a test) can tell why it was cut.
      onTimeout: () => {
        app.log.error(
          {
            delay_ms: CLOSE_DELAY_MS,
            waiting_for: countResources(process.getActiveResourcesInfo()),
          },
          'shutdown did not finish in time: exiting with 1 (leads already acknowledged are committed)',
        )
      },
    },
    async ({ signal, err }) => {
      if (err) app.log.error({ err: { message: err.message, stack: err.stack } }, 'closing after an unexpected error')
      else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
      await closeAll()
    },
  )

  // The metrics port first: it logs nothing, so a start that fails on either port never says it
  // was listening.
  if (config.metricsPort !== 0) {
    metrics = await listenOrExplain('METRICS_PORT', config.metricsHost, config.metricsPort, closeAll, () =>
      listenMetrics(app.metrics.registry, config.metricsHost, config.metricsPort, () => app.readiness()),
    )
  }
  await listenOrExplain('PORT', config.host, config.port, closeAll, () => app.listen({ host: config.host, port: config.port }))
  app.log.info(
    {
      version: app.spec.version,
      url: config.publicBaseUrl,
      docs: `${config.publicBaseUrl}/docs`,
      metrics: metrics ? `http://${config.metricsHost}:${metrics.port}/metrics` : 'off',
    },
    'studio-api ready',
  )
}

/** Listens; a port that is taken or privileged ends the process, naming the variable to change. */
async function listenOrExplain<T>(
  variable: string,
  host: string,
  port: number,
  closeAll: () => Promise<unknown>,
  listen: () => Promise<T>,
): Promise<T> {
  try {
    return await listen()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err
    const why =
      code === 'EADDRINUSE' ? 'is already in use (another studio-api, or another program)' : 'needs privileges this process does not have'
    await closeAll()
    flushLogs()
    process.stderr.write(
      `studio-api: port ${port} on ${host} ${why}; set ${variable} to a free port, e.g. ${variable}=${port + 1} npm start\n`,
    )
    process.exit(1)
  }
}

/** Starts the server in this process; a failure to start ends the process with its reason. */
export function start(options: StartOptions = {}): Promise<void> {
  return main(options).catch((err: Error) => {
    refuseConfig(err)
    flushLogs()
    process.stderr.write(`studio-api failed to start: ${err.message}\n`)
    process.exit(1)
  })
}

// Started when run as the program (server.ts, dist/server.js, or dist/server.bundle.js), not when
// imported. In a bundle every module shares the bundle's URL, so the file's name is checked too:
// the bench's fsync-off bundle imports this module and starts it its own way.
const entry = process.argv[1]
if (entry !== undefined && basename(entry).startsWith('server.') && realpathSync(entry) === fileURLToPath(import.meta.url)) {
  await start()
}
