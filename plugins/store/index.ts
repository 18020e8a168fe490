// The store plugin: owns the storage connection for the app's lifetime.
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { openStore, type Store } from './open.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const store = await openStore(config, {
      onPoolError: (err) =>
        app.log.warn(
          { err: { message: err.message, code: (err as { code?: string }).code } },
          'storage connection lost; the pool reconnects',
        ),
    })
    app.log.info({ storage: store.dialect, location: store.location }, 'storage ready')
    app.decorate('store', store)
    app.addHook('onClose', async () => store.close())
  },
  { name: 'store', fastify: '5.x' },
)

export type { Store }
