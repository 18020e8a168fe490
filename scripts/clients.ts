// Manage OAuth clients and API keys in the configured storage; safe while the server runs
// (SQLite WAL + busy timeout, or PostgreSQL). A revoked client's tokens stop working within
// CLIENT_STATUS_TTL_SECONDS (30 s by default).
//
//   npm run clients -- create --name "Website" --scopes read:projects,write:leads
//   npm run clients -- list
//   npm run clients -- revoke <client_id>
//   npm run clients -- rotate <client_id>
//   npm run clients -- create-key --name "CRM sync" --scopes read:leads
//   npm run clients -- list-keys | revoke-key <key_id>
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.js'
import { createApiKey, createClient, rotateClient } from '../plugins/auth/clients-admin.js'
import { loadPepper } from '../plugins/auth/secrets.js'
import { openStore } from '../plugins/store/open.js'

const usage = `usage: npm run clients -- <command>
  create --name NAME --scopes a,b   create a client; prints client_id and client_secret once
  list                              list clients (never secrets)
  revoke CLIENT_ID                  revoke a client (its tokens stop within the status TTL)
  rotate CLIENT_ID                  issue a new secret; the old one stops at once
  create-key --name NAME --scopes a,b   create an API key (X-API-Key); printed once
  list-keys                         list API keys
  revoke-key KEY_ID                 revoke an API key
scopes: read:projects, read:leads, write:leads`

/** A mistake in the command line: reported with the usage, exit status 2. */
class UsageError extends Error {}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, scopes: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  })
}

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>
  try {
    parsed = parseOptions(argv)
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const { positionals, values } = parsed
  const [command, id] = positionals
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  if (!command) throw new UsageError('no command given')
  const config = loadConfig()
  const store = await openStore(config)
  const pepper = loadPepper(config)
  const scopes = (values.scopes ?? '').split(/[,\s]+/).filter(Boolean)
  try {
    switch (command) {
      case 'create': {
        if (!values.name) throw new UsageError('create needs --name')
        const c = await createClient(store, pepper, { name: values.name, scopes })
        process.stdout.write(
          `client_id: ${c.client_id}\nclient_secret: ${c.client_secret}\nscopes: ${c.scopes.join(' ')}\n` +
            'The secret is shown only now: store it safely.\n',
        )
        return 0
      }
      case 'list': {
        const rows = await store.clients.list()
        for (const r of rows) {
          process.stdout.write(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\t${r.created_at}\n`)
        }
        if (rows.length === 0) process.stdout.write('no clients\n')
        return 0
      }
      case 'revoke': {
        if (!id) throw new UsageError('revoke needs a client id')
        if (!(await store.clients.revoke(id, new Date().toISOString()))) throw new Error(`no active client ${id}`)
        process.stdout.write(`revoked ${id}; its tokens stop working within ${config.clientStatusTtlSeconds} s\n`)
        return 0
      }
      case 'rotate': {
        if (!id) throw new UsageError('rotate needs a client id')
        const secret = await rotateClient(store, pepper, id)
        if (!secret) throw new Error(`no active client ${id}`)
        process.stdout.write(`client_id: ${id}\nclient_secret: ${secret}\nThe old secret no longer works.\n`)
        return 0
      }
      case 'create-key': {
        if (!values.name) throw new UsageError('create-key needs --name')
        const k = await createApiKey(store, pepper, { name: values.name, scopes })
        process.stdout.write(`key_id: ${k.id}\napi_key: ${k.api_key}\nscopes: ${k.scopes.join(' ')}\n`)
        return 0
      }
      case 'list-keys': {
        for (const r of await store.clients.listApiKeys()) {
          process.stdout.write(`${r.id}\t${r.revoked_at ? 'revoked' : 'active'}\t${r.scopes}\t${r.name}\n`)
        }
        return 0
      }
      case 'revoke-key': {
        if (!id) throw new UsageError('revoke-key needs a key id')
        if (!(await store.clients.revokeApiKey(id, new Date().toISOString()))) throw new Error(`no active key ${id}`)
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    if (err instanceof UsageError) {
      process.stderr.write(`clients: ${err.message}\n${usage}\n`)
      process.exit(2)
    }
    process.stderr.write(`clients: ${err instanceof ConfigError ? err.message : err.message}\n`)
    process.exit(1)
  },
)
