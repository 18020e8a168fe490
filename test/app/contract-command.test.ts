import { writeFileSync } from 'node:fs'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { CONTRACT_NAME } from '../../scripts/contract/run.js'
import { main } from '../../scripts/contract.js'
import { newClient, spec, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { live } from '../helpers/mcp.js'

async function contract(base: string, id: string, secret: string, extra: string[] = []) {
  const lines: string[] = []
  const code = await main(['--base', base, '--client-id', id, '--client-secret', secret, ...extra], { out: (l) => lines.push(l) })
  return { code, out: lines.join('\n') }
}

/** A proxy in front of `target` whose answers pass through `change` (method, path, status, headers, body). */
async function breakingProxy(
  t: Test,
  target: string,
  change: (method: string, path: string, status: number, headers: Record<string, unknown>, body: string) => string,
): Promise<string> {
  const upstream = new URL(target)
  const proxy = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    const out = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = []
        answer.on('data', (c: Buffer) => chunks.push(c))
        answer.on('end', () => {
          const headers = { ...answer.headers }
          const body = change(
            req.method ?? 'GET',
            (req.url ?? '').split('?')[0] ?? '',
            answer.statusCode ?? 0,
            headers,
            Buffer.concat(chunks).toString(),
          )
          delete headers['content-length']
          delete headers['transfer-encoding']
          res.writeHead(answer.statusCode ?? 502, headers as Record<string, string>)
          res.end(body)
        })
      },
    )
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done))
  t.teardown(() => new Promise<void>((done) => proxy.close(() => done())))
  proxy.closeIdleConnections?.()
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}

t.test('against a fresh server: every operation, its examples and error cases pass', async (t) => {
  const { app, base } = await live(t)
  const client = await newClient(app, [...spec.scopes], 'Contract check client')
  const { code, out } = await contract(base, client.client_id, client.client_secret)
  t.equal(code, 0, out)
  const summary = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(out)
  t.ok(summary, 'the closing line counts the cases')
  t.equal(summary?.[2], '0', 'none failed')
  t.ok(Number(summary?.[1]) >= 40, `a case per example and error case (${summary?.[1]} passed)`)
  t.match(out, /^ok +\/openapi\.json is the spec's version 1\.3\.0$/m)
  for (const op of spec.operations.keys())
    t.match(out, new RegExp(`^ok +${op} 200 \\(request example\\)$`, 'm'), `${op}: its request example`)
  // The documented error examples, provoked by their names, and what the responses make possible.
  for (const [line, what] of [
    ['issueToken 401 invalid_client', 'invalid_client'],
    ['issueToken 400 unsupported_grant_type', 'unsupported_grant_type'],
    ['issueToken 400 invalid_target', 'invalid_target'],
    ['issueToken 415 unsupported_media_type', 'unsupported_media_type'],
    ['submitLead 400 invalid_request', 'missing_field'],
    ['submitLead 400 invalid_request', 'invalid_field'],
    ['submitLead 400 invalid_request', 'refused_key'],
    ['submitLead 401 unauthorized', 'no_token'],
    ['submitLead 403 insufficient_scope', 'insufficient_scope'],
    ['submitLead 409 idempotency_conflict', 'idempotency_conflict'],
    ['submitLead 413 payload_too_large', 'payload_too_large'],
    ['getLeads 403 insufficient_scope', 'insufficient_scope'],
    ['getProjects 431 headers_too_large', 'headers_too_large'],
  ]) {
    t.match(out, new RegExp(`^ok +${line} \\(documented example ${what}\\)$`, 'm'), `${line} (${what})`)
  }
  for (const line of [
    'getLeads 400 invalid_request \\(limit past its bound\\)',
    'getProjects 304 \\(If-None-Match with the ETag\\)',
    'submitLead 200 \\(the same Idempotency-Key and body again\\)',
    'getLeads 200 \\(page 1 of limit=1\\)',
  ]) {
    t.match(out, new RegExp(`^ok +${line}$`, 'm'), line)
  }
  t.match(out, /^skip +getProjects 404 no_catalogue: the deployment has a catalogue/m, 'what it cannot provoke is listed, with why')
  t.match(out, /^skip +.*429 rate_limited.*would spend the budget/m)

  // What it wrote: one lead, marked, and named on the output.
  const { token } = await tokenFor(app, ['read:leads'])
  const log = (await app.inject({ url: '/leads.json', headers: { authorization: `Bearer ${token}` } })).json() as {
    id: string
    name: string
    note?: string
  }[]
  t.equal(log.length, 1, 'one lead per run (the replay and the conflict store nothing)')
  t.equal(log[0]?.name, CONTRACT_NAME)
  t.match(log[0]?.note, /contract check \(npm run contract/)
  t.match(out, new RegExp(`^wrote: submitLead ${log[0]?.id} `, 'm'), 'the output names the lead it wrote')
})

t.test('against answers that break the spec: the failures, named', async (t) => {
  const { app, base } = await live(t)
  const client = await newClient(app, [...spec.scopes])
  const proxied = await breakingProxy(t, base, (method, path, status, headers, body) => {
    // The receipt loses its status; the catalogue its remaining budget.
    if (method === 'POST' && path === '/scripts/enquiry_backend.php' && status === 200) {
      const { status: _dropped, ...rest } = JSON.parse(body) as Record<string, unknown>
      return JSON.stringify(rest)
    }
    if (path === '/project_metadata.json') delete headers['x-ratelimit-remaining']
    return body
  })
  const { code, out } = await contract(proxied, client.client_id, client.client_secret)
  t.equal(code, 1, 'a failed case fails the run')
  t.match(out, /^FAIL +submitLead 200 \(request example\)\n +POST \/scripts\/enquiry_backend\.php → 200: body matches the spec/m)
  t.match(
    out,
    /^FAIL +getProjects 200 \(request example\)\n(?: +.*\n)* +GET \/project_metadata\.json → 200: (?:X-RateLimit-Remaining|the spec marks X-RateLimit-Remaining required)/m,
  )
  t.match(out, /^ok +getJwks 200 \(request example\)$/m, 'what the proxy leaves alone still passes')
  const summary = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(out)
  t.ok(Number(summary?.[2]) >= 2, `failures counted (${summary?.[2]})`)
})

t.test('against a spec the real answers do not meet', async (t) => {
  const dir = testdir(t, {}) // before the app: testdir() empties the test's folder, the app's data in it
  const doc = structuredClone(spec.document) as unknown as {
    components: { schemas: Record<string, { required: string[]; properties: Record<string, unknown> }> }
  }
  const receipt = doc.components.schemas.LeadReceipt
  if (!receipt) throw new Error('the spec has no LeadReceipt')
  receipt.properties.tracking_url = { type: 'string', format: 'uri' }
  receipt.required.push('tracking_url')
  const file = join(dir, 'openapi.yaml')
  writeFileSync(file, stringify(doc))
  const { app, base } = await live(t)
  const client = await newClient(app, [...spec.scopes])
  const { code, out } = await contract(base, client.client_id, client.client_secret, ['--spec', file, '--quiet'])
  t.equal(code, 1)
  t.match(
    out,
    /^FAIL +submitLead 200 \(request example\)\n +POST \/scripts\/enquiry_backend\.php → 200: body matches the spec.*tracking_url/m,
  )
  t.notMatch(out, /^ok /m, '--quiet prints only failures')
})
