// The worker thread of a scheduled backup (index.ts starts one per backup): the copy, its
// integrity check and the fsyncs are synchronous SQLite and file work that would hold the event
// loop for as long as they take; here they hold only this thread, at the lowest CPU priority.
// One message in (the options,
// as workerData), one out (the outcome or the error), then the thread ends.
import { parentPort, workerData } from 'node:worker_threads'
import { yieldCpu } from './files.js'
import { type SnapshotOptions, writeSnapshot } from './snapshot.js'

const port = parentPort
if (!port) throw new Error('backup-thread.ts runs as a worker thread (features/backup starts it)')
// This thread only: the server's event loop and its writer thread come first.
yieldCpu()
try {
  port.postMessage({ outcome: await writeSnapshot(workerData as SnapshotOptions) })
} catch (err) {
  port.postMessage({ error: (err as Error).message ?? String(err) })
}
