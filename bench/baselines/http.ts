// Baseline for getProjects: a bare node:http server answering GET /project_metadata.json with
// the same catalogue bytes the API serves (BODY_FILE, written by the default run from the API's
// own response). No auth, no logging, no framework: the ceiling for serving those bytes with Node.
//
//   PORT=4001 BODY_FILE=/tmp/catalogue.json node --import tsx bench/baselines/http.ts
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const port = Number(process.env.PORT ?? 4001)
const file = process.env.BODY_FILE
if (!file) {
  process.stderr.write('baseline-http: set BODY_FILE to the catalogue bytes to serve\n')
  process.exit(2)
}
const body = readFileSync(file)
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) }

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/project_metadata.json') {
    res.writeHead(200, headers)
    res.end(body)
    return
  }
  res.writeHead(404, { 'content-length': '0' })
  res.end()
})

server.listen(port, '127.0.0.1', () => process.stdout.write(`baseline-http listening on ${port}\n`))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
