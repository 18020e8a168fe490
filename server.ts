// The process: configuration, logger, signals, listen. Everything else is buildApp().
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'

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

  const app = await buildApp(config, {
    logger: {
      level: config.logLevel,
      // Belt and braces: the request log never includes headers, but nothing sensitive may leak.
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-api-key"]', '*.client_secret', '*.access_token'],
        censor: '[redacted]',
      },
    },
  })

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err: { message: err.message, stack: err.stack } }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    await app.close()
  })

  await app.listen({ host: config.host, port: config.port })
  app.log.info({ version: '1.3.0', url: config.publicBaseUrl, docs: `${config.publicBaseUrl}/docs` }, 'studio-api ready')
}

main().catch((err: Error) => {
  process.stderr.write(`studio-api failed to start: ${err.message}\n`)
  process.exit(1)
})
