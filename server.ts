// The process: configuration, logger, signals, listen. Everything else is buildApp().
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { loadSpec } from './plugins/spec.js'

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`studio-api: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }

  // Log lines are written in batches of up to 4 KiB, and at least every second, so a quiet
  // server's lines still show promptly; everything left is flushed on exit.
  const logDestination = pino.destination({ sync: false, minLength: 4096 })
  setInterval(() => logDestination.flush(), 1000).unref()
  process.on('exit', () => logDestination.flushSync())
  const app = await buildApp(config, {
    // No redaction pass: nothing logs headers, bodies or credentials in the first place (request-log
    // writes a fixed set of fields; test/logs.test.ts checks a full run), and pino's wildcard
    // redaction would copy every log line.
    // Buffered writes (4 KiB) instead of one write per line: flushed on close and on exit.
    logger: { level: config.logLevel, stream: logDestination },
  })

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err: { message: err.message, stack: err.stack } }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    await app.close()
  })

  await app.listen({ host: config.host, port: config.port })
  app.log.info({ version: loadSpec().info.version, url: config.publicBaseUrl, docs: `${config.publicBaseUrl}/docs` }, 'studio-api ready')
}

main().catch((err: Error) => {
  process.stderr.write(`studio-api failed to start: ${err.message}\n`)
  process.exit(1)
})
