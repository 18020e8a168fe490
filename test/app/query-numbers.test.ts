// Numbers that arrive as text (third audit, finding 9): `?limit=Infinity`, `-Infinity` and
// `1e400` on /leads.json answered 500. Every numeric query parameter and header of the spec takes
// a finite decimal number as JSON writes one and nothing else: 400 naming the parameter.
import t from 'tap'
import { compileText } from '../../lib/ajv.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import { call, leadOf, spec, testApp, tokenFor } from '../helpers/app.js'

/** What JavaScript or Ajv would read as a number, but is no finite decimal number. */
const NOT_DECIMAL = [
  'Infinity',
  '-Infinity',
  '+Infinity',
  '1e400',
  '-1e400',
  'NaN',
  '0x10',
  '0b11',
  '0o7',
  ' 5',
  '5 ',
  '+5',
  '1_000',
  '.5',
  '5.',
  '١٠',
  '',
]

t.test('compileText: a numeric value is a finite decimal number, or refused as the wrong type', async (t) => {
  const validate = compileText({
    type: 'object',
    properties: { n: { type: 'integer', minimum: 1 }, x: { type: ['number', 'null'] }, s: { type: 'string' } },
  })
  for (const value of NOT_DECIMAL) {
    for (const name of ['n', 'x']) {
      const data: Record<string, unknown> = { [name]: value }
      t.notOk(validate(data), `${name}=${JSON.stringify(value)} refused`)
      t.match(validate.errors?.[0], { keyword: 'type', instancePath: `/${name}` }, `${name}=${JSON.stringify(value)}: a type error`)
    }
  }
  for (const [value, read] of [
    ['10', 10],
    ['1e2', 100],
    ['0', 0],
    ['-2.5', -2.5],
    ['1E-3', 0.001],
  ] as const) {
    const data: Record<string, unknown> = { x: value }
    t.ok(validate(data), `x=${value} accepted`)
    t.equal(data.x, read, `x=${value} read as ${read}`)
  }
  const s: Record<string, unknown> = { s: 'Infinity' }
  t.ok(validate(s), 'a string parameter keeps any text')
})

t.test('every numeric query parameter and header of the spec: 400 naming it for what is no finite decimal number', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, [...spec.scopes])
  const auth = { authorization: `Bearer ${token}` }
  await call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: auth, payload: leadOf(1) })
  let checked = 0
  for (const op of spec.operations.values()) {
    const parameters = ((op as { parameters?: JsonSchema[] }).parameters ?? []).map(
      (p) => p as { name: string; in: string; schema?: JsonSchema },
    )
    for (const parameter of parameters) {
      const type = [parameter.schema?.type].flat()
      if (!type.includes('integer') && !type.includes('number')) continue
      if (parameter.in !== 'query' && parameter.in !== 'header') continue
      for (const value of NOT_DECIMAL.filter((v) => v !== '' || parameter.in === 'query')) {
        const url = parameter.in === 'query' ? `${op.path}?${parameter.name}=${encodeURIComponent(value)}` : op.path
        const headers = parameter.in === 'header' ? { ...auth, [parameter.name]: value } : auth
        const res = await call(t, app, { method: op.method.toUpperCase() as 'GET', url, headers })
        t.equal(res.statusCode, 400, `${op.operationId} ${parameter.name}=${JSON.stringify(value)}: 400`)
        t.equal(res.json().code, 'invalid_request')
        t.match(
          res.json().message,
          new RegExp(`\`${parameter.name}\``),
          `${op.operationId} ${parameter.name}=${JSON.stringify(value)}: named`,
        )
        t.match(res.json().hint, /finite decimal number/, 'the hint says how to write it')
      }
      checked++
    }
  }
  t.ok(checked >= 1, `${checked} numeric parameters checked (getLeads' limit among them)`)
  const fine = await call(t, app, { url: '/leads.json?limit=1e1', headers: auth })
  t.equal(fine.statusCode, 200, 'a decimal number in exponent form is a number')
})
