// Baseline for submitLead: the naive durable way. A minimal Fastify route with its own JSON
// schema for {name, email, phone}; each lead is written to SQLite (WAL, synchronous=FULL) in its
// own transaction, so every lead costs one fsync; 200 with a receipt once committed.
//
//   PORT=4002 DB_FILE=/tmp/naive.db node --import tsx bench/baseline-leads.ts
import { randomUUID } from 'node:crypto'
import SQLite from 'better-sqlite3'
import Fastify from 'fastify'

const port = Number(process.env.PORT ?? 4002)
const file = process.env.DB_FILE
if (!file) {
  process.stderr.write('baseline-leads: set DB_FILE to a fresh SQLite file\n')
  process.exit(2)
}

const db = new SQLite(file)
db.pragma('journal_mode = WAL')
db.pragma('synchronous = FULL')
db.exec(`create table if not exists leads (
  seq integer primary key autoincrement,
  id text not null unique,
  name text not null,
  email text not null,
  phone text not null,
  received_at text not null
)`)
const insert = db.prepare('insert into leads (id, name, email, phone, received_at) values (?, ?, ?, ?, ?)')
// One transaction per lead: BEGIN, INSERT, COMMIT (fsync of the WAL).
const store = db.transaction((id: string, name: string, email: string, phone: string, at: string) => {
  insert.run(id, name, email, phone, at)
})

interface Lead {
  name: string
  email: string
  phone: string
}

const app = Fastify({ logger: false })
app.post<{ Body: Lead }>(
  '/leads',
  {
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'email', 'phone'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 200 },
          email: { type: 'string', format: 'email', maxLength: 254 },
          phone: { type: 'string', minLength: 6, maxLength: 40, pattern: '^(?=(?:\\D*\\d){6})[0-9 +()./-]+$' },
        },
      },
    },
  },
  async (request) => {
    const id = randomUUID()
    const received_at = new Date().toISOString()
    const { name, email, phone } = request.body
    store(id, name.trim(), email, phone, received_at)
    return { id, received_at, status: 'received' }
  },
)

await app.listen({ host: '127.0.0.1', port })
process.stdout.write(`baseline-leads listening on ${port}\n`)
process.on('SIGTERM', () => {
  void app.close().then(() => {
    db.close()
    process.exit(0)
  })
})
