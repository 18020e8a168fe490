// The breaking-change gate (lib/spec-diff.ts, `npm run spec:diff`) on variants of the spec, each
// built in memory or in the test's folder from spec/openapi.yaml (never edited): each kind of
// breaking change is found, named where it is, and fails the gate without a new major version;
// additive changes pass.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse, stringify } from 'yaml'
import { projectRoot } from '../../config.js'
import { diffSpecs, gate, lastRelease, type SpecChange } from '../../lib/spec-diff.js'
import { main } from '../../scripts/spec-diff.js'
import { testdir } from '../helpers/folders.js'

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, edited by each case
type Doc = Record<string, any>

const written: Doc = parse(readFileSync(join(projectRoot, 'spec', 'openapi.yaml'), 'utf8'))
const edited = (edit: (doc: Doc) => void, from: Doc = written): Doc => {
  const doc = structuredClone(from)
  edit(doc)
  return doc
}
const SUBMIT = '/scripts/enquiry_backend.php'
const breakingOf = (changes: SpecChange[]) => changes.filter((c) => c.kind === 'breaking')

/** The gate on a variant at the same version: it must fail, naming the change where it is. */
function failsWith(t: Test, after: Doc, where: string, pointer: RegExp, description: RegExp, before: Doc = written) {
  const verdict = gate({ version: '1.3.0', doc: before }, { version: '1.4.0', doc: after })
  t.notOk(verdict.ok, 'the gate fails without a new major version')
  const found = verdict.breaking.find((c) => c.where === where && pointer.test(c.pointer) && description.test(c.description))
  t.ok(found, `breaking: ${where} ${pointer}`, { breaking: verdict.breaking })
  t.match(verdict.message.join('\n'), where, 'the message names the operation')
  t.match(verdict.message.join('\n'), /set info\.version to 2\.0\.0/, 'and says what to do')
  t.ok(gate({ version: '1.3.0', doc: before }, { version: '2.0.0', doc: after }).ok, 'a new major version lets it through')
}

t.test('a removed response field is breaking', async (t) => {
  const after = edited((d) => {
    delete d.components.schemas.LeadReceipt.properties.status
    d.components.schemas.LeadReceipt.required = ['id', 'received_at']
  })
  failsWith(t, after, `POST ${SUBMIT}`, /\/responses\/200\/content\/application~1json\/schema\/properties\/status$/, /status/)
})

t.test('a renamed response field is breaking (the old name is gone)', async (t) => {
  const after = edited((d) => {
    const project = d.components.schemas.Project
    project.properties.name = project.properties.title
    delete project.properties.title
    project.required = project.required.map((f: string) => (f === 'title' ? 'name' : f))
  })
  failsWith(t, after, 'GET /project_metadata.json', /\/properties\/title$/, /title/)
})

t.test('a new required request field is breaking', async (t) => {
  const after = edited((d) => {
    d.components.schemas.LeadFields.properties.company = { type: 'string', maxLength: 100 }
    d.components.schemas.LeadFields.required.push('company')
  })
  failsWith(t, after, `POST ${SUBMIT}`, /\/requestBody\/content\/application~1json\/schema\/.*required/, /company/)
})

t.test('a new required parameter is breaking', async (t) => {
  const after = edited((d) => {
    d.paths['/leads.json'].get.parameters[0].required = true
  })
  failsWith(t, after, 'GET /leads.json', /\/parameters\/0\/required$/, /limit/)
})

t.test('a narrowed enum of a request field is breaking; of a response field it is not', async (t) => {
  // The spec has no request enum today: the release gets one, the variant narrows it.
  const before = edited((d) => {
    d.components.schemas.LeadFields.properties.contact_by = { type: 'string', enum: ['email', 'phone', 'either'] }
  })
  const after = edited((d) => {
    d.components.schemas.LeadFields.properties.contact_by.enum = ['email', 'phone']
  }, before)
  failsWith(t, after, `POST ${SUBMIT}`, /\/requestBody\/.*\/contact_by\/enum/, /contact_by/, before)

  const narrowedResponse = edited((d) => {
    d.components.schemas.LeadLogEntry.allOf[1].properties.source.enum = ['api', 'form']
  })
  t.same(breakingOf(diffSpecs(written, narrowedResponse)), [], 'fewer values in a response break no client')
})

t.test('a narrowed pattern or length of a request field is breaking', async (t) => {
  failsWith(
    t,
    edited((d) => {
      d.components.schemas.LeadFields.properties.phone.pattern = '^[0-9 ]+$'
    }),
    `POST ${SUBMIT}`,
    /\/properties\/phone\/pattern$/,
    /pattern/,
  )
  failsWith(
    t,
    edited((d) => {
      d.components.schemas.LeadFields.properties.note.maxLength = 100
    }),
    `POST ${SUBMIT}`,
    /\/properties\/note\/maxLength$/,
    /maxLength/,
  )
})

t.test('a removed operation is breaking', async (t) => {
  const after = edited((d) => {
    delete d.paths['/leads.json']
  })
  failsWith(t, after, 'GET /leads.json', /^\/paths\/~1leads\.json\/get$/, /Removed/)
})

t.test('a changed status is breaking', async (t) => {
  const after = edited((d) => {
    const responses = d.paths[SUBMIT].post.responses
    responses['201'] = responses['200']
    delete responses['200']
  })
  failsWith(t, after, `POST ${SUBMIT}`, /\/responses\/200$/, /Removed/)
})

t.test('a changed content type is breaking, of a response or of a request', async (t) => {
  failsWith(
    t,
    edited((d) => {
      const content = d.paths['/project_metadata.json'].get.responses['200'].content
      content['application/vnd.studio+json'] = content['application/json']
      delete content['application/json']
    }),
    'GET /project_metadata.json',
    /\/responses\/200\/content\/application~1json$/,
    /application\/json/,
  )
  failsWith(
    t,
    edited((d) => {
      const content = d.paths[SUBMIT].post.requestBody.content
      content['application/vnd.studio+json'] = content['application/json']
      delete content['application/json']
    }),
    `POST ${SUBMIT}`,
    /\/requestBody\/content\/application~1json$/,
    /application\/json/,
  )
})

t.test('a security requirement added is breaking: credentials on a public operation, or one more scope', async (t) => {
  failsWith(
    t,
    edited((d) => {
      d.paths['/.well-known/jwks.json'].get.security = [{ OAuth2: ['read:projects'] }]
    }),
    'GET /.well-known/jwks.json',
    /\/security$/,
    /no credentials becomes OAuth2 \[read:projects\]/,
  )
  // The differ alone calls this non-breaking: our security rule is what catches it.
  failsWith(
    t,
    edited((d) => {
      d.paths['/project_metadata.json'].get.security = [{ OAuth2: ['read:projects', 'read:leads'] }]
    }),
    'GET /project_metadata.json',
    /\/security$/,
    /OAuth2 \[read:projects\] is refused/,
  )
  const looser = diffSpecs(
    written,
    edited((d) => {
      d.paths[SUBMIT].post.security = [{ OAuth2: ['write:leads'] }, {}]
    }),
  )
  t.same(breakingOf(looser), [], 'an anonymous alternative refuses no client that was accepted')
  t.match(looser, [{ kind: 'non-breaking', where: `POST ${SUBMIT}`, by: 'our rule: security' }])
})

t.test('events: a field removed from a webhook event is breaking for receivers; one added is not', async (t) => {
  failsWith(
    t,
    edited((d) => {
      const data = d.components.schemas.LeadErasedEvent.properties.data
      delete data.properties.reason
      data.required = ['id', 'erased_at']
    }),
    'webhook lead.erased',
    /^\/webhooks\/lead\.erased\/post\/requestBody\/content\/application~1json\/schema\/properties\/data\/properties\/reason$/,
    /reason/,
  )
  const added = diffSpecs(
    written,
    edited((d) => {
      d.components.schemas.LeadErasedEvent.properties.data.properties.erased_by = { type: 'string', maxLength: 64 }
    }),
  )
  t.same(breakingOf(added), [])
  t.ok(
    added.some((c) => c.where === 'webhook lead.erased' && c.kind === 'non-breaking'),
    'the addition is listed',
  )
})

t.test('additive changes pass the gate at a minor version', async (t) => {
  const after = edited((d) => {
    d.components.schemas.LeadFields.properties.preferred_time = { type: 'string', maxLength: 40 }
    d.components.schemas.LeadReceipt.properties.status_url = { type: 'string', format: 'uri', maxLength: 2048 }
    d.components.schemas.LeadLogEntry.allOf[1].properties.source.enum.push('import')
    d.paths['/leads.json'].get.parameters.push({ name: 'source', in: 'query', required: false, schema: { type: 'string', maxLength: 16 } })
    d.paths['/styles.json'] = {
      get: {
        operationId: 'getStyles',
        security: [{ OAuth2: ['read:projects'] }],
        responses: {
          '200': { description: 'The styles.', content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } },
        },
      },
    }
  })
  const verdict = gate({ version: '1.3.0', doc: written }, { version: '1.4.0', doc: after })
  t.ok(verdict.ok, verdict.message.join('\n'))
  t.same(verdict.breaking, [])
  const seen = (pointer: RegExp) =>
    t.ok(
      verdict.changes.some((c) => pointer.test(c.pointer) && c.kind === 'non-breaking'),
      String(pointer),
    )
  seen(/requestBody\/.*\/properties\/preferred_time$/)
  seen(/responses\/200\/.*\/properties\/status_url$/)
  seen(/\/source\/enum\/3$/)
  seen(/^\/paths\/~1leads\.json\/get\/parameters\/2$/)
  seen(/^\/paths\/~1styles\.json\/get$/)
  t.ok(
    verdict.changes.some((c) => c.by === 'our rule: enum values added'),
    'a value added to a response enum is additive by our rule (the differ alone calls it breaking)',
  )
  t.ok(gate({ version: '1.3.0', doc: written }, { version: '1.3.0', doc: after }).ok, 'additions pass even before the version is raised')
})

t.test('a deprecation is listed, and breaks nothing', async (t) => {
  const changes = diffSpecs(
    written,
    edited((d) => {
      d.paths['/leads.json'].get.deprecated = true
      d.paths['/leads.json'].get['x-sunset'] = '2027-06-30'
    }),
  )
  t.same(breakingOf(changes), [])
  t.ok(changes.some((c) => c.kind === 'deprecated' && c.where === 'GET /leads.json'))
})

t.test('the version never goes back, and the last release is the highest version', async (t) => {
  const verdict = gate({ version: '1.3.0', doc: written }, { version: '1.2.9', doc: written })
  t.notOk(verdict.ok)
  t.match(verdict.message[0], /goes back from 1\.3\.0/)
  t.equal(lastRelease(['1.3.0.yaml', '1.10.0.yaml', '1.9.2.yaml', 'README.md']), '1.10.0')
  t.equal(lastRelease([]), undefined)
})

t.test('npm run spec:diff: each change with its kind and pointer, the verdict, the exit code', async (t) => {
  const dir = testdir(t, { released: {} })
  writeFileSync(join(dir, 'released', '1.3.0.yaml'), stringify(written))
  const run = async (doc: Doc) => {
    const file = join(dir, 'openapi.yaml')
    writeFileSync(file, stringify(doc))
    const lines: string[] = []
    const code = await main(['--spec', file, '--released', join(dir, 'released')], { out: (l) => lines.push(l) })
    return { code, out: lines.join('\n') }
  }

  const same = await run(written)
  t.equal(same.code, 0, same.out)
  t.match(same.out, /^1\.3\.0 \(.*1\.3\.0\.yaml\) → 1\.3\.0 \(working spec\): 0 change/)

  const breaking = await run(
    edited((d) => {
      d.info.version = '1.4.0'
      delete d.paths['/leads.json']
    }),
  )
  t.equal(breaking.code, 1, 'a breaking change fails')
  t.match(breaking.out, /^BREAKING +GET \/leads\.json: .*\/paths\/~1leads\.json\/get$/m, 'the change, with where and its pointer')
  t.match(breaking.out, /1\.3\.0 → 1\.4\.0: 1 breaking change without a new major version/)
  t.match(breaking.out, /set info\.version to 2\.0\.0/)

  const additive = await run(
    edited((d) => {
      d.info.version = '1.4.0'
      d.components.schemas.LeadReceipt.properties.status_url = { type: 'string', maxLength: 2048 }
    }),
  )
  t.equal(additive.code, 0, additive.out)
  t.match(additive.out, /^non-breaking +POST \/scripts\/enquiry_backend\.php: .*status_url/m)
  t.match(additive.out, /1\.3\.0 → 1\.4\.0: nothing breaking/)

  const help: string[] = []
  t.equal(await main(['--help'], { out: (l) => help.push(l) }), 0)
  t.match(help.join('\n'), /Usage: spec:diff \[options\]/)
})
