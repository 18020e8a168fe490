-- POST of a new, unique lead on every request: request() builds the JSON body from this
-- invocation's tag, the thread id and a per-thread counter, so no two leads of a bench run are
-- alike (the tag must differ between invocations: bench/lib/wrk.ts gives each wrk run its own).
--   BENCH_AUTHORIZATION  Authorization header value (unset: no header, e.g. the naive baseline)
--   BENCH_LEAD_TAG       letters, digits and dashes naming this invocation
--   BENCH_CONSENT        set: each lead carries "consent":true (an anonymous submission must)
--
--   LUA_PATH='bench/wrk/?.lua;;' BENCH_AUTHORIZATION="Bearer $TOKEN" BENCH_LEAD_TAG=try1 \
--     wrk -t1 -c32 -d6s --latency -s bench/wrk/submit-lead.lua http://127.0.0.1:3000/scripts/enquiry_backend.php
local common = require('common')

wrk.method = 'POST'
wrk.headers['Content-Type'] = 'application/json'
local authorization = common.env('BENCH_AUTHORIZATION', nil)
if authorization then
  wrk.headers['Authorization'] = authorization
end
local tag = common.env('BENCH_LEAD_TAG', tostring(os.time()))
local consent = common.env('BENCH_CONSENT', nil) and ',"consent":true' or ''

-- setup() runs in wrk's main Lua state, once per thread: it numbers the threads.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set('id', threads)
end

local tid = 1
function init(_args)
  tid = id or 1
end

local counter = 0
function request()
  counter = counter + 1
  local body = string.format(
    '{"name":"Bench Lead %s %d-%d","email":"lead%d.t%d.%s@example.com","phone":"+44 20 %08d"%s}',
    tag, tid, counter, counter, tid, tag, counter % 100000000, consent
  )
  return wrk.format(nil, nil, nil, body)
end

done = common.done
