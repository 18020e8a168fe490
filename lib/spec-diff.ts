// What changed between two versions of the spec, and whether a consumer of the older one breaks.
// The differ is api-smart-diff (pure TypeScript from the npm registry, no install script, OpenAPI 3
// rules over JSON Schema 2020-12 schemas: operations, parameters, bodies, responses and their
// headers, content types, statuses). The others were weighed: @pb33f/openapi-changes and oasdiff's
// npm wrappers download a Go binary at install, Optic's packages are archived, Atlassian's
// openapi-diff reads no OpenAPI 3.1. Three thin rules of our own sit on top, each named in the
// change it classifies:
//   - webhooks: the differ reads `paths` only; an event the studio sends is, for its receiver, a
//     response, so each webhook is compared as an operation whose 200 response is the event;
//   - security: the differ calls a scope added to an operation non-breaking; a client whose token
//     satisfied the old requirement must satisfy the new one, or the change is breaking;
//   - enum values added to a response (or an event) are additive, as GitHub's and Stripe's
//     consumers are told (the differ calls them breaking): clients must accept values they do not know.
import { apiCompare, type Diff } from 'api-smart-diff'
import semver from 'semver'

export type ChangeKind = 'breaking' | 'non-breaking' | 'deprecated' | 'annotation' | 'unclassified'

export interface SpecChange {
  kind: ChangeKind
  /** The operation (`POST /scripts/enquiry_backend.php`), the event (`webhook lead.received`), or the part of the document. */
  where: string
  /** A JSON pointer into the document that has the thing (the older one for a removal). */
  pointer: string
  description: string
  /** Who classified it: the differ, or one of our rules. */
  by: 'api-smart-diff' | 'our rule: webhooks' | 'our rule: security' | 'our rule: enum values added'
}

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents as parsed from YAML
type Doc = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** The key a webhook takes among the paths while compared; no real path can have it (paths begin with /). */
const WEBHOOK = 'webhook '

/** JSON pointer of a path of keys. */
const pointerOf = (path: readonly (string | number)[]): string =>
  `/${path.map((k) => String(k).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`

/** Each webhook as an operation whose 200 response is the event (its body and the headers it carries). */
function webhooksAsPaths(doc: Doc): Doc {
  const out: Doc = { ...doc, paths: { ...doc.paths } }
  delete out.webhooks
  for (const [name, item] of Object.entries<Doc>(doc.webhooks ?? {})) {
    const ops: Doc = {}
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (!METHODS.includes(method)) continue
      const headers = Object.fromEntries(
        (op.parameters ?? []).map((p: Doc) => {
          const param = deref(doc, p)
          return [param.name, { required: param.required, schema: param.schema }]
        }),
      )
      ops[method] = {
        operationId: op.operationId,
        ...(op.deprecated !== undefined && { deprecated: op.deprecated }),
        responses: { '200': { description: 'the event', headers, content: op.requestBody ? deref(doc, op.requestBody).content : {} } },
      }
    }
    out.paths[`${WEBHOOK}${name}`] = ops
  }
  return out
}

function deref(doc: Doc, node: Doc): Doc {
  const ref = node?.$ref
  if (typeof ref !== 'string') return node
  return deref(
    doc,
    ref
      .slice(2)
      .split('/')
      .reduce((at: Doc, key: string) => at?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc),
  )
}

/** Where a differ path is, for a person: the operation or event, else the document's part. */
function whereOf(path: readonly (string | number)[]): string {
  if (path[0] !== 'paths') return path.slice(0, 2).join('/')
  const key = String(path[1] ?? '')
  if (key.startsWith(WEBHOOK)) return `webhook ${key.slice(WEBHOOK.length)}`
  const method = path[2]
  return typeof method === 'string' && METHODS.includes(method) ? `${method.toUpperCase()} ${key}` : key
}

/** The differ's path as a pointer into the real document (a webhook back under `webhooks`). */
function realPointer(path: readonly (string | number)[]): string {
  const key = String(path[1] ?? '')
  if (path[0] !== 'paths' || !key.startsWith(WEBHOOK)) return pointerOf(path)
  // paths/<webhook name>/<method>/responses/200/(content|headers)/… → webhooks/<name>/<method>/(requestBody/content|parameters)/…
  const [, , method, responses, , part, ...rest] = path
  const tail =
    part === 'content' ? ['requestBody', 'content', ...rest] : part === 'headers' ? ['parameters', ...rest] : [responses, ...rest]
  return pointerOf(['webhooks', key.slice(WEBHOOK.length), method ?? '', ...tail].filter((k) => k !== undefined) as (string | number)[])
}

const isSecurity = (path: readonly (string | number)[]) =>
  (path[0] === 'paths' && path[3] === 'security') || (path.length >= 1 && path[0] === 'security')

const inResponse = (path: readonly (string | number)[]) => path[0] === 'paths' && path.includes('responses')

function fromDiffer(d: Diff): SpecChange | undefined {
  const path = d.path as (string | number)[]
  const reported = path[0] === 'paths' || (path[0] === 'components' && path[1] === 'securitySchemes')
  if (!reported || isSecurity(path)) return undefined
  const webhook = String(path[1] ?? '').startsWith(WEBHOOK)
  let kind = d.type as ChangeKind
  let by: SpecChange['by'] = webhook ? 'our rule: webhooks' : 'api-smart-diff'
  if (kind === 'breaking' && d.action === 'add' && path.at(-2) === 'enum' && inResponse(path)) {
    kind = 'non-breaking'
    by = 'our rule: enum values added'
  }
  let description = d.description || `${d.action} ${path.slice(2).join(' › ')}`
  if (webhook) description = description.replaceAll('Response 200 content', 'event body').replaceAll('Response 200', 'event')
  return { kind, where: whereOf(path), pointer: realPointer(path), description, by }
}

type Requirement = Record<string, string[]>

/** The security requirements of an operation, `[{}]` when it needs no credentials. */
function requirementsOf(doc: Doc, op: Doc): Requirement[] {
  const reqs: Requirement[] = op.security ?? doc.security ?? []
  return reqs.length === 0 ? [{}] : reqs
}

/** Does a client that meets `held` meet `needed`? Every scheme of `needed` is in `held`, with no more scopes. */
const covers = (held: Requirement, needed: Requirement): boolean =>
  Object.entries(needed).every(([scheme, scopes]) => held[scheme] !== undefined && scopes.every((s) => held[scheme]?.includes(s)))

/** Our security rule: a client that met one of the old requirements must meet one of the new. */
function securityChanges(before: Doc, after: Doc): SpecChange[] {
  const changes: SpecChange[] = []
  for (const [path, item] of Object.entries<Doc>(after.paths ?? {})) {
    for (const method of METHODS) {
      const newOp = item[method]
      const oldOp = before.paths?.[path]?.[method]
      if (!newOp || !oldOp) continue
      const was = requirementsOf(before, oldOp)
      const now = requirementsOf(after, newOp)
      if (JSON.stringify(was) === JSON.stringify(now)) continue
      const stranded = was.filter((held) => !now.some((needed) => covers(held, needed)))
      const show = (r: Requirement[]) =>
        r
          .map((x) =>
            Object.keys(x).length === 0
              ? 'no credentials'
              : Object.entries(x)
                  .map(([k, v]) => (v.length ? `${k} [${v.join(' ')}]` : k))
                  .join(' + '),
          )
          .join(' or ')
      changes.push({
        kind: stranded.length > 0 ? 'breaking' : 'non-breaking',
        where: `${method.toUpperCase()} ${path}`,
        pointer: pointerOf(['paths', path, method, 'security']),
        description:
          stranded.length > 0
            ? `security: ${show(was)} becomes ${show(now)}; a client with ${show(stranded)} is refused`
            : `security: ${show(was)} becomes ${show(now)}; every client that was accepted still is`,
        by: 'our rule: security',
      })
    }
  }
  return changes
}

/** Every change from `before` to `after` that a consumer can see: operations, events, security. */
export function diffSpecs(before: Doc, after: Doc): SpecChange[] {
  const { diffs } = apiCompare(webhooksAsPaths(before), webhooksAsPaths(after))
  const changes = diffs.map(fromDiffer).filter((c): c is SpecChange => c !== undefined)
  return [...changes, ...securityChanges(before, after)]
}

export interface Release {
  version: string
  doc: Doc
}

export interface Verdict {
  changes: SpecChange[]
  breaking: SpecChange[]
  ok: boolean
  /** What to tell the person who changed the spec, one line each. */
  message: string[]
}

/**
 * The gate: a breaking change needs a new major version; the version never goes back. Changes that
 * break nothing pass whatever the version (they ship as additions, as Stripe and GitHub ship theirs).
 */
export function gate(released: Release, working: Release): Verdict {
  const changes = diffSpecs(released.doc, working.doc)
  const breaking = changes.filter((c) => c.kind === 'breaking')
  const from = released.version
  const to = working.version
  if (!semver.valid(to)) return { changes, breaking, ok: false, message: [`info.version ${to} is not a version (MAJOR.MINOR.PATCH)`] }
  if (semver.lt(to, from)) {
    return { changes, breaking, ok: false, message: [`info.version goes back from ${from} (released) to ${to}: a version only rises`] }
  }
  if (breaking.length === 0 || semver.major(to) > semver.major(from)) {
    const note = breaking.length > 0 ? `${breaking.length} breaking, allowed by the new major version ${to}` : 'nothing breaking'
    return { changes, breaking, ok: true, message: [`${from} → ${to}: ${note}`] }
  }
  const next = `${semver.major(from) + 1}.0.0`
  return {
    changes,
    breaking,
    ok: false,
    message: [
      `${from} → ${to}: ${breaking.length} breaking change${breaking.length === 1 ? '' : 's'} without a new major version:`,
      ...breaking.map((c) => `  ${c.where}: ${c.description} (${c.pointer})`),
      'Clients generated from the released spec would break. Either keep the change backwards compatible',
      '(add beside what exists; mark what goes `deprecated: true` with `x-sunset: YYYY-MM-DD`, and remove it',
      `in a later major version), or make it a major version: set info.version to ${next}, add a section`,
      `"## ${next}" to CHANGELOG.md saying what breaks and how to migrate, and copy the spec to`,
      `spec/released/${next}.yaml when it is released (docs/architecture.md, "Changing the spec").`,
    ],
  }
}

/** The highest version among released spec files named `X.Y.Z.yaml`. */
export function lastRelease(files: readonly string[]): string | undefined {
  const versions = files.map((f) => /^(\d+\.\d+\.\d+)\.yaml$/.exec(f)?.[1]).filter((v): v is string => v !== undefined)
  return semver.rsort(versions)[0]
}
