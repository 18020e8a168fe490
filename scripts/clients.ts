// Manage OAuth clients and API keys in the configured storage; safe while the server runs
// (SQLite WAL + busy timeout, or PostgreSQL). A revoked client's tokens, and the tokens issued
// under a rotated secret, stop working within CLIENT_STATUS_TTL_SECONDS (30 s by default).
//
//   npm run clients -- create --name "Website" --scopes read:projects,write:leads
//   npm run clients -- list
//   npm run clients -- revoke <client_id>
//   npm run clients -- rotate <client_id>
//   npm run clients -- create-key --name "CRM sync" --scopes read:leads
//   npm run clients -- list-keys | revoke-key <key_id>
//   npm run clients -- forget-pepper   (the pepper is lost for good: the next server makes a new one)
//   npm run clients -- forget-signing-key   (to sign with another key: the next server records the key it has)
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { type ClientAdmin, createApiKey, createClient, rotateClient } from '../plugins/auth/admin.js'
import { ClientsRepository } from '../plugins/auth/clients.js'
import { forgetSigningKey } from '../plugins/auth/keys.js'
import { forgetPepper } from '../plugins/auth/secrets.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import type { Store } from '../plugins/store/open.js'
import { commandLine, runCli, UsageError } from './cli.js'
import { NEW_DATABASE_USAGE, openServerStore, serverPepper } from './data.js'

const usage = `usage: npm run clients -- <command>
  create --name NAME --scopes a,b   create a client; prints client_id and client_secret once
  list                              list clients (never secrets)
  revoke CLIENT_ID                  revoke a client (its tokens stop within the status TTL)
  rotate CLIENT_ID                  issue a new secret; the old one stops at once, its tokens within the status TTL
  create-key --name NAME --scopes a,b   create an API key (X-API-Key); printed once. No operation
                                    accepts API keys yet: the spec lists the ApiKey scheme on none
  list-keys                         list API keys
  revoke-key KEY_ID                 revoke an API key
  forget-pepper                     only when the secret pepper is lost for good: the database forgets it,
                                    the next server start makes a new one; then rotate every client
  forget-signing-key                to sign tokens with another key: the database forgets the one it has,
                                    the next server start records its own; tokens of the old key are refused
  ${NEW_DATABASE_USAGE}
scopes: read:projects, read:leads, write:leads`

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      scopes: { type: 'string' },
      'new-database': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

/** The commands that make the database forget a key's check value, and what they say. */
const FORGET = new Map<string, { run: (db: Store['db']) => Promise<boolean>; done: string; nothing: string }>([
  [
    'forget-pepper',
    {
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
      run: forgetSigningKey,
      done:
        'The database no longer checks the token signing key. The next server start records the key it has (JWT_PRIVATE_KEY,\n' +
        'or the key file of its data folder, made if there is none): start every instance with that same key. Tokens signed\n' +
        'with the old key are refused from then on; clients ask for new ones with their credentials.\n',
      nothing: 'The database held no check of a signing key: nothing to forget.\n',
    },
  ],
])

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = commandLine(() => parseOptions(argv))
  const [command, id] = positionals
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  if (!command) throw new UsageError('no command given')
  const config = loadConfig()
  const newDatabase = values['new-database'] === true
  const store = await openServerStore(config, newDatabase)
  // Before the pepper is loaded: these are for a database whose key is gone or is to change.
  const forget = FORGET.get(command)
  if (forget) {
    try {
      process.stdout.write((await forget.run(store.db)) ? forget.done : forget.nothing)
      return 0
    } finally {
      await store.close()
    }
  }
  const spec = new Spec(loadSpec())
  let admin: ClientAdmin
  try {
    admin = {
      clients: new ClientsRepository(store.db, store.dialect),
      pepper: await serverPepper(store, config, newDatabase),
      scopes: spec.scopes,
    }
  } catch (err) {
    await store.close()
    throw err
  }
  const scopes = (values.scopes ?? '').split(/[,\s]+/).filter(Boolean)
  try {
    switch (command) {
      case 'create': {
        if (!values.name) throw new UsageError('create needs --name')
        const c = await createClient(admin, { name: values.name, scopes })
        process.stdout.write(
          `client_id: ${c.client_id}\nclient_secret: ${c.client_secret}\nscopes: ${c.scopes.join(' ')}\n` +
            'The secret is shown only now: store it safely.\n',
        )
        return 0
      }
      case 'list': {
        const rows = await admin.clients.list()
        for (const r of rows) {
          process.stdout.write(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\t${r.created_at}\n`)
        }
        if (rows.length === 0) process.stdout.write('no clients\n')
        return 0
      }
      case 'revoke': {
        if (!id) throw new UsageError('revoke needs a client id')
        if (!(await admin.clients.revoke(id, new Date().toISOString()))) throw new Error(`no active client ${id}`)
        process.stdout.write(`revoked ${id}; its tokens stop working within ${config.clientStatusTtlSeconds} s\n`)
        return 0
      }
      case 'rotate': {
        if (!id) throw new UsageError('rotate needs a client id')
        const secret = await rotateClient(admin, id)
        if (!secret) throw new Error(`no active client ${id}`)
        process.stdout.write(
          `client_id: ${id}\nclient_secret: ${secret}\nThe old secret no longer works; tokens issued with it stop within ${config.clientStatusTtlSeconds} s.\n`,
        )
        return 0
      }
      case 'create-key': {
        if (!values.name) throw new UsageError('create-key needs --name')
        const k = await createApiKey(admin, { name: values.name, scopes })
        process.stdout.write(`key_id: ${k.id}\napi_key: ${k.api_key}\nscopes: ${k.scopes.join(' ')}\n`)
        const accepting = [...spec.operations.values()]
          .filter((op) => (op.security ?? []).some((r) => 'ApiKey' in r))
          .map((op) => op.operationId)
        process.stdout.write(
          accepting.length > 0
            ? `Operations that accept it (X-API-Key): ${accepting.join(', ')}.\n`
            : 'Note: no operation accepts API keys yet (the spec lists the ApiKey scheme on none); the key works once an operation lists it. Use OAuth clients (create) meanwhile.\n',
        )
        return 0
      }
      case 'list-keys': {
        for (const r of await admin.clients.listApiKeys()) {
          process.stdout.write(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\n`)
        }
        return 0
      }
      case 'revoke-key': {
        if (!id) throw new UsageError('revoke-key needs a key id')
        if (!(await admin.clients.revokeApiKey(id, new Date().toISOString()))) throw new Error(`no active key ${id}`)
        process.stdout.write(`revoked ${id}\n`)
        return 0
      }
      default:
        process.stderr.write(`unknown command ${command}\n${usage}\n`)
        return 2
    }
  } finally {
    await store.close()
  }
}

runCli('clients', usage, main)
