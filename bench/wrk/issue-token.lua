-- POST /api/token: the client-credentials grant, a form body with HTTP Basic client
-- authentication; the same request every time (wrk builds it once per thread).
--   BENCH_AUTHORIZATION  "Basic base64(client_id:client_secret)"
--
--   LUA_PATH='bench/wrk/?.lua;;' BENCH_AUTHORIZATION="Basic $(printf %s "$ID:$SECRET" | base64 -w0)" \
--     wrk -t1 -c32 -d6s --latency -s bench/wrk/issue-token.lua http://127.0.0.1:3000/api/token
local common = require('common')

wrk.method = 'POST'
wrk.body = 'grant_type=client_credentials'
wrk.headers['Content-Type'] = 'application/x-www-form-urlencoded'
wrk.headers['Authorization'] = assert(common.env('BENCH_AUTHORIZATION', nil), 'set BENCH_AUTHORIZATION to the Basic credentials')

done = common.done
