// Client ID Metadata Documents served by a test (features/staff/cimd.ts): an https server on
// 127.0.0.1 with a certificate made for the test (openssl), trusted through https.globalAgent as
// an operator's CA bundle would be, since the app fetches documents with node:https in the test's
// own process. The app must allow private addresses (WEBHOOKS_ALLOW_PRIVATE, webhooksAllowPrivate)
// to fetch a document from the loopback.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, globalAgent } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Test } from 'tap'
import { subfolder } from './folders.js'
import { discovery, type PublicClient } from './staff.js'

export interface DocumentServer {
  /** `https://127.0.0.1:PORT` */
  origin: string
  /** `127.0.0.1:PORT`: the host the consent page names a document's client by. */
  host: string
  /** The bodies it serves, by path (a path not there answers 404). */
  documents: Map<string, string>
  /** How many requests it answered. */
  readonly fetches: number
}

/** A public client's metadata document at `id`, its own URL. */
export function clientDocument(id: string, redirectUri: string, name: string): string {
  return JSON.stringify({
    client_id: id,
    client_name: name,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'none',
  })
}

/** The document server, closed (and the default CAs back) at the end of the test. */
export async function documentServer(t: Test): Promise<DocumentServer> {
  const dir = subfolder(t, 'cimd-')
  const [keyFile, certFile] = [join(dir, 'key.pem'), join(dir, 'cert.pem')]
  // A self-signed certificate for 127.0.0.1, a day long.
  const made =
    'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1'
  execFileSync('openssl', [...made.split(' '), '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' })
  const cert = readFileSync(certFile)
  const previousCa = globalAgent.options.ca
  globalAgent.options.ca = cert
  t.teardown(() => {
    globalAgent.options.ca = previousCa
  })
  const documents = new Map<string, string>()
  let fetches = 0
  const server = createServer({ key: readFileSync(keyFile), cert }, (req, res) => {
    fetches++
    const body = documents.get(req.url ?? '')
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(body ?? '')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => server.close())
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin: `https://${host}`,
    host,
    documents,
    get fetches() {
      return fetches
    },
  }
}

/** A client named by its document's URL: discovery only, no registration. */
export async function documentClient(base: string, id: string, redirectUri: string): Promise<PublicClient> {
  return { as: await discovery(base), client: { client_id: id, token_endpoint_auth_method: 'none' }, redirectUri }
}
