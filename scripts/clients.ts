// `studio clients`: OAuth clients and API keys in the configured storage; safe while the server
// runs (SQLite WAL + busy timeout, or PostgreSQL). A revoked client's tokens, and the tokens issued
// under a rotated secret, stop working within CLIENT_STATUS_TTL_SECONDS (30 s by default).
//
//   npx studio clients create --name "Website" --scopes read:projects,write:leads
//   npx studio clients list | revoke CLIENT_ID | rotate CLIENT_ID
//   npx studio clients create-key --name "CRM sync" --scopes read:leads | list-keys | revoke-key KEY_ID
//   npx studio clients forget-pepper | forget-signing-key   (a key lost for good, or to change)
// (`npm run clients -- …` is the same command.)
import type { Command } from 'commander'
import { type Config, loadConfig } from '../config.js'
import { type ClientAdmin, createApiKey, createClient, rotateClient } from '../plugins/auth/admin.js'
import { ClientsRepository } from '../plugins/auth/clients.js'
import { forgetSigningKey } from '../plugins/auth/keys.js'
import { forgetPepper } from '../plugins/auth/secrets.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import type { Store } from '../plugins/store/open.js'
import { act, command, need, newDatabaseOption, subcommand } from './cli.js'
import { openServerStore, serverPepper } from './data.js'

/** The commands that make the database forget a key's check value, and what they say. */
const FORGET = new Map<string, { description: string; run: (db: Store['db']) => Promise<boolean>; done: string; nothing: string }>([
  [
    'forget-pepper',
    {
      description:
        'only when the secret pepper is lost for good: the database forgets it, the next server start makes a new one; then rotate every client',
      run: forgetPepper,
      done:
        'The database no longer checks the secret pepper. The next server start uses the pepper it finds, or makes a new one;\n' +
        'every client secret and API key made with the old pepper fails: give each client a new secret (npm run clients -- rotate CLIENT_ID)\n' +
        'and each API key a new one (create-key, then revoke-key the old).\n',
      nothing: 'The database held no check of a secret pepper: nothing to forget.\n',
    },
  ],
  [
    'forget-signing-key',
    {
      description:
        "to sign tokens with another key: the database forgets the one it has, the next server start records its own; the old key's tokens are refused",
      run: forgetSigningKey,
      done:
        'The database no longer checks the token signing key. The next server start records the key it has (JWT_PRIVATE_KEY,\n' +
        'or the key file of its data folder, made if there is none): start every instance with that same key. Tokens signed\n' +
        'with the old key are refused from then on; clients ask for new ones with their credentials.\n',
      nothing: 'The database held no check of a signing key: nothing to forget.\n',
    },
  ],
])

/** The storage of the configured server, and what the client commands need of it; closed after `fn`. */
async function withAdmin(cmd: Command, fn: (admin: ClientAdmin, config: Config) => Promise<number>): Promise<number> {
  const config = loadConfig()
  const newDatabase = cmd.optsWithGlobals().newDatabase === true
  const store = await openServerStore(config, newDatabase)
  try {
    const spec = new Spec(loadSpec())
    const admin: ClientAdmin = {
      clients: new ClientsRepository(store.db, store.dialect),
      pepper: await serverPepper(store, config, newDatabase),
      scopes: spec.scopes,
    }
    return await fn(admin, config)
  } finally {
    await store.close()
  }
}

const scopesOf = (list: string | undefined): string[] => (list ?? '').split(/[,\s]+/).filter(Boolean)

const out = (text: string): void => {
  process.stdout.write(text)
}

/** `studio clients`: OAuth clients and API keys, in the configured storage. */
export function clientsCommand(): Command {
  const clients = command(
    'clients',
    'OAuth clients and API keys in the configured storage; safe while the server runs. Scopes: read:projects, read:leads, write:leads',
    'OAuth clients and API keys',
  ).addOption(newDatabaseOption())

  subcommand(clients, 'create', 'create a client; prints client_id and client_secret once')
    .option('--name <name>', 'what the client is (shown in lists and logs)')
    .option('--scopes <list>', 'the scopes it may ask for, comma-separated (default: none)')
    .action(
      act(async (opts: { name?: string; scopes?: string }, cmd: Command) => {
        const name = need(opts.name, '--name', 'create')
        return withAdmin(cmd, async (admin) => {
          const c = await createClient(admin, { name, scopes: scopesOf(opts.scopes) })
          out(
            `client_id: ${c.client_id}\nclient_secret: ${c.client_secret}\nscopes: ${c.scopes.join(' ')}\n` +
              'The secret is shown only now: store it safely.\n',
          )
          return 0
        })
      }),
    )

  subcommand(clients, 'list', 'list clients (never secrets)').action(
    act((_opts: object, cmd: Command) =>
      withAdmin(cmd, async (admin) => {
        const rows = await admin.clients.list()
        for (const r of rows) out(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\t${r.created_at}\n`)
        if (rows.length === 0) out('no clients\n')
        return 0
      }),
    ),
  )

  subcommand(clients, 'revoke', 'revoke a client (its tokens stop within CLIENT_STATUS_TTL_SECONDS)')
    .argument('<client_id>')
    .action(
      act((id: string, _opts: object, cmd: Command) =>
        withAdmin(cmd, async (admin, config) => {
          if (!(await admin.clients.revoke(id, new Date().toISOString()))) throw new Error(`no active client ${id}`)
          out(`revoked ${id}; its tokens stop working within ${config.clientStatusTtlSeconds} s\n`)
          return 0
        }),
      ),
    )

  subcommand(clients, 'rotate', 'issue a new secret; the old one stops at once, its tokens within the status TTL')
    .argument('<client_id>')
    .action(
      act((id: string, _opts: object, cmd: Command) =>
        withAdmin(cmd, async (admin, config) => {
          const secret = await rotateClient(admin, id)
          if (!secret) throw new Error(`no active client ${id}`)
          out(
            `client_id: ${id}\nclient_secret: ${secret}\nThe old secret no longer works; tokens issued with it stop within ${config.clientStatusTtlSeconds} s.\n`,
          )
          return 0
        }),
      ),
    )

  subcommand(
    clients,
    'create-key',
    'create an API key (X-API-Key), printed once; no operation accepts API keys unless the spec lists ApiKey on it',
  )
    .option('--name <name>', 'what the key is for')
    .option('--scopes <list>', 'its scopes, comma-separated')
    .action(
      act(async (opts: { name?: string; scopes?: string }, cmd: Command) => {
        const name = need(opts.name, '--name', 'create-key')
        return withAdmin(cmd, async (admin) => {
          const k = await createApiKey(admin, { name, scopes: scopesOf(opts.scopes) })
          out(`key_id: ${k.id}\napi_key: ${k.api_key}\nscopes: ${k.scopes.join(' ')}\n`)
          const spec = new Spec(loadSpec())
          const accepting = [...spec.operations.values()]
            .filter((op) => (op.security ?? []).some((r) => 'ApiKey' in r))
            .map((op) => op.operationId)
          out(
            accepting.length > 0
              ? `Operations that accept it (X-API-Key): ${accepting.join(', ')}.\n`
              : 'Note: no operation accepts API keys yet (the spec lists the ApiKey scheme on none); the key works once an operation lists it. Use OAuth clients (create) meanwhile.\n',
          )
          return 0
        })
      }),
    )

  subcommand(clients, 'list-keys', 'list API keys (never the keys)').action(
    act((_opts: object, cmd: Command) =>
      withAdmin(cmd, async (admin) => {
        for (const r of await admin.clients.listApiKeys()) out(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\n`)
        return 0
      }),
    ),
  )

  subcommand(clients, 'revoke-key', 'revoke an API key')
    .argument('<key_id>')
    .action(
      act((id: string, _opts: object, cmd: Command) =>
        withAdmin(cmd, async (admin) => {
          if (!(await admin.clients.revokeApiKey(id, new Date().toISOString()))) throw new Error(`no active key ${id}`)
          out(`revoked ${id}\n`)
          return 0
        }),
      ),
    )

  for (const [name, forget] of FORGET) {
    subcommand(clients, name, forget.description).action(
      act(async (_opts: object, cmd: Command) => {
        // Before the pepper is loaded: these are for a database whose key is gone or is to change.
        const store = await openServerStore(loadConfig(), cmd.optsWithGlobals().newDatabase === true)
        try {
          out((await forget.run(store.db)) ? forget.done : forget.nothing)
          return 0
        } finally {
          await store.close()
        }
      }),
    )
  }
  return clients
}
