// The Redis side of the shared counters (counters.ts): one hash per (budget, caller),
// `<REDIS_PREFIX>rl:<budget>:<caller>` with the current window's start (`s`, ms on Redis' clock)
// and count (`n`), expiring a little after the window. The caller is `client:<client id>` or
// `addr:<IPv4 address, or IPv6 /64>` (never anything a person typed). Two Lua scripts, so that a
// lease is one atomic round trip; windows are timed on Redis' clock, which every instance adopts.
import type { Redis } from 'ioredis'
import type { Remote } from './leases.js'

/** A pair's hash outlives its window by this much, so that late give-backs still find it. */
const GRACE_MS = 10_000

/**
 * KEYS[1] the pair's hash; ARGV max, need, extra, charge, window (ms), known (a window start, or 0).
 * Starts a window if there is none (or it is over), or restores the window `known` if Redis lost
 * it before its end; charges `charge` requests already let through unless they were counted in
 * the window `known` and that is over; grants the waiting requests'
 * `need` and, of what is left after them, at most a quarter as `extra` (so that near the end of a
 * budget leases shrink and the last tokens go to requests that are waiting, not to an instance's
 * reserve). Returns {granted, count, window start, now}.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local need = tonumber(ARGV[2])
local extra = tonumber(ARGV[3])
local charge = tonumber(ARGV[4])
local window = tonumber(ARGV[5])
local known = tonumber(ARGV[6])
local start = tonumber(redis.call('HGET', KEYS[1], 's') or '0')
local used = 0
local fresh = false
if start == 0 and known ~= 0 and now < known + window then
  -- The instance's window is not over, but Redis has lost it (restarted without its data):
  -- restored, with what the instance charges.
  start = known
  fresh = true
elseif start == 0 or now >= start + window then
  start = now
  fresh = true
else
  used = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
end
if known ~= 0 and known ~= start then charge = 0 end
local free = max - used - charge
local granted = 0
if free > 0 then
  granted = math.min(need, free)
  granted = granted + math.min(extra, math.floor((free - granted) / 4))
end
local add = charge + granted
if add > 0 or fresh then
  used = used + add
  redis.call('HSET', KEYS[1], 's', start, 'n', used)
  redis.call('PEXPIREAT', KEYS[1], start + window + ${GRACE_MS})
end
return {granted, used, start, now}
`

/** KEYS[1] the pair's hash; ARGV n, start. Gives unspent tokens back while their window is the current one. */
const GIVE = `
if tonumber(redis.call('HGET', KEYS[1], 's') or '0') == tonumber(ARGV[2]) then
  return redis.call('HINCRBY', KEYS[1], 'n', -tonumber(ARGV[1]))
end
return 0
`

interface WithScripts {
  studioRateTake(key: string, ...args: number[]): Promise<[number, number, number, number]>
  studioRateGive(key: string, n: number, start: number): Promise<number>
}

export function redisRemote(redis: Redis): Remote {
  redis.defineCommand('studioRateTake', { numberOfKeys: 1, lua: TAKE })
  redis.defineCommand('studioRateGive', { numberOfKeys: 1, lua: GIVE })
  const scripts = redis as unknown as WithScripts
  return {
    take: (key, max, need, extra, charge, windowMs, known) => scripts.studioRateTake(key, max, need, extra, charge, windowMs, known),
    give: (key, n, start) => scripts.studioRateGive(key, n, start),
    ping: () => redis.ping(),
  }
}

/**
 * A Redis client that fails fast while Redis is away (no offline queue) and reconnects forever.
 * Commands issued in the same tick go out as one pipeline (the leases of several pairs, or a
 * request's two failure budgets).
 */
export async function connectRedis(url: string): Promise<Redis> {
  // Loaded only when Redis is configured.
  const { Redis } = await import('ioredis')
  return new Redis(url, {
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    lazyConnect: false,
  })
}
