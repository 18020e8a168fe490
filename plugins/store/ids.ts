// Kept for its figure (bench/README.md, "The ablation": `npm run bench -- --ablation=id-pool`):
// submitLead on PostgreSQL, its leads/s and server CPU per lead against uuid's v7() as is: about
// 10 %, at the rule's threshold (the table shows each run's side; on SQLite it buys less).
//
// Ids of stored rows (leads, outbox events): UUIDv7s (RFC 9562) from the uuid package, in time
// order, so that a commit's ids go to the end of their index. uuid draws its 16 random bytes from
// the system for every id (crypto.getRandomValues), about 6 % of a lead's CPU in a profile; here
// they come from a pool refilled once per 256 ids, and are handed to uuid with the time and a
// counter (its documented `random`, `msecs` and `seq` options). The counter keeps the order within
// a millisecond, as uuid's own state does: random at each new millisecond, then one more per id.
import { randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

const pool = new Uint8Array(16 * 256)
let taken = pool.length
let lastMs = -1
let seq = 0

/** A new UUIDv7, after every one made before it by this process. */
export function uuidv7(): string {
  if (taken === pool.length) {
    randomFillSync(pool)
    taken = 0
  }
  const random = pool.subarray(taken, taken + 16)
  taken += 16
  const now = Date.now()
  if (now > lastMs) {
    lastMs = now
    // 31 random bits, so that a burst within the millisecond has room to count up.
    seq = ((random[6] ?? 0) & 0x7f) * 0x1000000 + ((random[7] ?? 0) << 16) + ((random[8] ?? 0) << 8) + (random[9] ?? 0)
  } else if (seq === 0xffffffff) {
    // Full for this millisecond: the next one's, as RFC 9562 allows.
    lastMs += 1
    seq = 0
  } else {
    seq += 1
  }
  return v7({ random, msecs: lastMs, seq })
}
