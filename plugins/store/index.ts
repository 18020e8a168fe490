// The store plugin: owns the storage connection for the app's lifetime, and says at start-up when
// the data folder (database, keys, credentials) is open to other users.
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { openStore, type Store } from './open.js'
import { readableByOthers } from './private-files.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

export default fp<{ config: Config; unsafeNoFsync?: boolean }>(
  async (app, { config, unsafeNoFsync = false }) => {
    const store = await openStore(config, {
      unsafeNoFsync,
      onPoolError: (err) =>
        app.log.warn(
          { err: { message: err.message, code: (err as { code?: string }).code } },
          'storage connection lost; the pool reconnects',
        ),
      onLost: (reason) =>
        app.log.error(
          `${reason}: storage now answers 503 and /readyz fails; restart the server (after restoring the data folder, if it was moved or deleted)`,
        ),
    })
    app.log.info({ storage: store.dialect, location: store.location }, 'storage ready')
    if (readableByOthers(config.dataDir)) {
      app.log.warn(
        { data_dir: config.dataDir },
        'the data folder is open to other users and could not be made private: give the server a folder of its own (chmod 700)',
      )
    }
    if (unsafeNoFsync && store.dialect === 'sqlite') {
      app.log.warn('fsync is OFF (SQLite synchronous=OFF): acknowledged leads can be lost on a crash; benchmark only')
    }
    app.decorate('store', store)
    app.addHook('onClose', async () => store.close())
  },
  { name: 'store', fastify: '5.x' },
)

export type { Store }
