// Baseline for submitLead on PostgreSQL: the naive durable way, leads.ts's twin (the
// route: naive-lead-route.ts). Each lead is one INSERT in its own transaction (autocommit: PostgreSQL flushes its WAL before the COMMIT
// returns), through a pool of as many connections as the API's DB_POOL_MAX default, so that
// concurrent commits can share WAL flushes, which is PostgreSQL's own group commit; 200 with a
// receipt once committed.
//
//   PORT=4003 DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench node --import tsx bench/baselines/leads-pg.ts
import pg from 'pg'
import { naiveLeadApp } from './naive-lead-route.js'

const port = Number(process.env.PORT ?? 4003)
const url = process.env.DATABASE_URL
if (!url) {
  process.stderr.write('baseline-leads-pg: set DATABASE_URL to a database of its own\n')
  process.exit(2)
}

const pool = new pg.Pool({ connectionString: url, max: Number(process.env.POOL_MAX ?? 10) })
await pool.query(`create table if not exists naive_leads (
  seq bigserial primary key,
  id uuid not null unique,
  name text not null,
  email text not null,
  phone text not null,
  received_at timestamptz not null
)`)

const app = naiveLeadApp((lead) =>
  pool.query('insert into naive_leads (id, name, email, phone, received_at) values ($1, $2, $3, $4, $5)', [
    lead.id,
    lead.name,
    lead.email,
    lead.phone,
    lead.received_at,
  ]),
)
app.get('/', async () => ({ status: 'ok' }))

await app.listen({ host: '127.0.0.1', port })
process.stdout.write(`baseline-leads-pg listening on ${port}\n`)
process.on('SIGTERM', () => {
  void app.close().then(async () => {
    await pool.end()
    process.exit(0)
  })
})
