// Baseline for submitLead: the naive durable way (the route: naive-lead-route.ts). Each lead is
// written to SQLite (WAL, synchronous=FULL) in its own transaction, so every lead costs one fsync;
// 200 with a receipt once committed.
//
//   PORT=4002 DB_FILE=/tmp/naive.db node --import tsx bench/baselines/leads.ts
import SQLite from 'better-sqlite3'
import { type NaiveLead, naiveLeadApp } from './naive-lead-route.js'

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
const store = db.transaction((lead: NaiveLead) => {
  insert.run(lead.id, lead.name, lead.email, lead.phone, lead.received_at)
})

const app = naiveLeadApp(store)

await app.listen({ host: '127.0.0.1', port })
process.stdout.write(`baseline-leads listening on ${port}\n`)
process.on('SIGTERM', () => {
  void app.close().then(() => {
    db.close()
    process.exit(0)
  })
})
