// One of several processes that make the same kept keys at the same moments (test/system/files.test.ts):
// for each folder given, it waits until its moment (a shared start time, then one every 150 ms),
// then reads or creates the key `k` there with keptValue, as instances starting together do.
// Prints what it read, one line per folder, as JSON.
//   node --import tsx test/helpers/keep-together.ts <startMs> <dir>...
import { randomBytes } from 'node:crypto'
import { keptValue } from '../../plugins/auth/secrets.js'

const [start, ...dirs] = process.argv.slice(2)
const read: string[] = []
for (const [i, dir] of dirs.entries()) {
  const at = Number(start) + i * 150
  while (Date.now() < at) {
    // Busy until the moment: a timer would add its own delay, different in every process.
  }
  read.push(keptValue(dir, 'k', () => randomBytes(32).toString('base64url')))
}
process.stdout.write(`${JSON.stringify(read)}\n`)
