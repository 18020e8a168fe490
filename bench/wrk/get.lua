-- GET of the URL's path, the same request every time (wrk builds it once per thread).
--   BENCH_AUTHORIZATION  Authorization header value, e.g. "Bearer eyJ..." (unset: no header)
--
--   LUA_PATH='bench/wrk/?.lua;;' BENCH_AUTHORIZATION="Bearer $TOKEN" \
--     wrk -t1 -c32 -d6s --latency -s bench/wrk/get.lua http://127.0.0.1:3000/project_metadata.json
local common = require('common')

local authorization = common.env('BENCH_AUTHORIZATION', nil)
if authorization then
  wrk.headers['Authorization'] = authorization
end

done = common.done
