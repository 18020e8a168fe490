-- Shared by the bench's wrk scripts (bench/lib/wrk.ts runs wrk with LUA_PATH=bench/wrk/?.lua).
-- done() prints one line, "BENCH_WRK_JSON {...}", that bench/lib/wrk.ts parses:
--   requests     completed responses (any status)
--   durationUs   the measured window
--   bytes        bytes received
--   errors       socket errors (connect, read, write, timeout) and status: responses with a
--                status > 399 (wrk's own count; these routes answer 200 or an error, never 1xx/3xx)
--   latencyUs    p50, p90, p99, max and mean of every response's latency, µs
--   cpuTicks     wrk's own CPU (user, system) from /proc/self/stat, in clock ticks: done() runs
--                after the worker threads have exited, so this is all of wrk's work
-- There is deliberately no response() hook: with one, wrk copies every response's headers and
-- body into Lua, which costs the generator CPU on every request.
local M = {}

--- An environment variable, or `default` when it is unset or empty.
function M.env(name, default)
  local v = os.getenv(name)
  if v == nil or v == '' then
    return default
  end
  return v
end

local function cpu_ticks()
  local f = io.open('/proc/self/stat', 'r')
  if not f then
    return -1, -1
  end
  local stat = f:read('*a')
  f:close()
  -- After the command name (in parentheses): state is field 1, utime 12, stime 13.
  local fields = {}
  for field in (stat:match('%) (.*)$') or ''):gmatch('%S+') do
    fields[#fields + 1] = field
  end
  return tonumber(fields[12]) or -1, tonumber(fields[13]) or -1
end

function M.done(summary, latency, _requests)
  local e = summary.errors
  local user, system = cpu_ticks()
  io.write(string.format(
    'BENCH_WRK_JSON {"requests":%.0f,"durationUs":%.0f,"bytes":%.0f,'
      .. '"errors":{"connect":%.0f,"read":%.0f,"write":%.0f,"timeout":%.0f,"status":%.0f},'
      .. '"latencyUs":{"p50":%.0f,"p90":%.0f,"p99":%.0f,"max":%.0f,"mean":%.1f},'
      .. '"cpuTicks":{"user":%.0f,"system":%.0f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    user, system
  ))
  io.flush()
end

return M
