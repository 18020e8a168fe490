// The store plugin: owns the storage connection for the app's lifetime, refuses a data folder that
// belongs to another user, and says at start-up when the data folder (database, keys,
// credentials) is open to other users.
import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { holdServerLock } from './in-use.js'
import type { Dialect } from './migrations.js'
import { openStore, type Store } from './open.js'
import { checkOwnership, readableByOthers } from './private-files.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

export interface StoreOptions {
  config: Config
  unsafeNoFsync?: boolean
  /**
   * Runs before migrations change an existing database, with the migrations about to run: the
   * backup feature's snapshot (app.ts hands it in; the store names no feature).
   */
  beforeMigrating?: (pending: string[], dialect: Dialect, log: FastifyBaseLogger) => Promise<void>
}

export default fp<StoreOptions>(
  async (app, { config, unsafeNoFsync = false, beforeMigrating }) => {
    // Another user's data folder is refused before anything in it is read (private-files.ts).
    checkOwnership(config.dataDir)
    const store = await openStore(config, {
      unsafeNoFsync,
      onPoolError: (err) =>
        app.log.warn(
          { err: { message: err.message, code: (err as { code?: string }).code } },
          'storage connection lost; the pool reconnects',
        ),
      ...(beforeMigrating && { beforeMigrating: (pending: string[], dialect: Dialect) => beforeMigrating(pending, dialect, app.log) }),
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
    // Tells restore (and the CLIs) that a server uses this folder, for as long as it runs (in-use.ts).
    const lock = store.dialect === 'sqlite' ? holdServerLock(config.dataDir) : undefined
    app.decorate('store', store)
    app.addHook('onClose', async () => {
      await store.close()
      lock?.release()
    })
  },
  { name: 'store', fastify: '5.x' },
)

export type { Store }
