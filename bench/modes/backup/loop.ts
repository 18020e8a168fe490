// Backups back to back until SIGTERM, the way `npm run backup` takes one (its own process, its
// own connection), for the backup mode (index.ts): one JSON line per finished backup on stdout.
//   node dist/bench/modes/backup/loop.js DATA_DIR INTO vacuum|backup-api
import { yieldCpu } from '../../../features/backup/files.js'
import { writeSnapshot } from '../../../features/backup/snapshot.js'

const [dataDir, into, method] = process.argv.slice(2)
if (!dataDir || !into || (method !== 'vacuum' && method !== 'backup-api')) {
  process.stderr.write('usage: backup-loop DATA_DIR INTO vacuum|backup-api\n')
  process.exit(2)
}
// As npm run backup does.
yieldCpu()
let stopping = false
process.on('SIGTERM', () => {
  stopping = true
})
while (!stopping) {
  // A turn of the event loop, where SIGTERM is noticed: a copy by VACUUM INTO never yields one.
  await new Promise((resolve) => setImmediate(resolve))
  const started = performance.now()
  const outcome = await writeSnapshot({
    dataDir,
    into,
    kind: 'backup',
    keysFromEnvironment: { signingKey: true, pepper: true },
    method,
    keep: 2,
  })
  if (outcome.written && !stopping) {
    process.stdout.write(`${JSON.stringify({ ms: performance.now() - started, bytes: outcome.written.bytes })}\n`)
  }
}
