// The one text rule (lib/text.ts) and the spec's name pattern agree, code point by code point:
// what cleaning removes or turns into a space is never what the pattern takes for the letter a
// name needs, so a name the spec accepts keeps a letter once cleaned. Below U+10000 the agreement
// is exact; beyond it the pattern cannot name format characters in every regex dialect (see the
// spec's comment), and the check after cleaning (features/leads/intake.ts) refuses those: they
// are listed here, so that a change on either side is seen.
import t from 'tap'
import { compileStrict } from '../../lib/ajv.js'
import { cleanLine, cleanText, REMOVED, visible } from '../../lib/text.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import { spec } from '../helpers/app.js'

const name = (spec.schema('LeadFields').properties as Record<string, JsonSchema>).name as JsonSchema
const validName = compileStrict(name)

/** Ranges as `0-8 e-1f …`, for a readable diff when the table or the pattern changes. */
function ranges(codes: number[]): string {
  const out: string[] = []
  for (let i = 0; i < codes.length; ) {
    let j = i
    while (j + 1 < codes.length && codes[j + 1] === (codes[j] as number) + 1) j++
    out.push((codes[i] as number).toString(16) + (j > i ? `-${(codes[j] as number).toString(16)}` : ''))
    i = j + 1
  }
  return out.join(' ')
}

t.test('every code point: a one-character name the spec accepts is one that is still valid once cleaned', async (t) => {
  const disagree: number[] = []
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue // no character: refused when the body is read
    const ch = String.fromCodePoint(cp)
    if (validName(ch) !== validName(cleanLine(ch))) disagree.push(cp)
  }
  t.equal(
    ranges(disagree),
    '110bd 110cd 13430-1343f 1bca0-1bca3 1d173-1d17a e0000-e00ff e01f0-e0fff',
    'they disagree only beyond U+FFFF, on format and default-ignorable characters the check after cleaning refuses',
  )
  for (const cp of disagree) {
    if (!validName(String.fromCodePoint(cp))) t.fail(`U+${cp.toString(16)}: the pattern accepts, cleaning refuses: nothing else`)
  }
})

t.test('the table: removed, a space or a line break, escaped', async (t) => {
  t.equal(cleanLine('  Ada\r\n\tLovelace\u2028\u0085 '), 'Ada Lovelace', 'line breaks of every spelling and tabs: one space')
  t.equal(cleanLine('\u202EAda\u202C \u2066Lovelace\u2069\u200F\u061C'), 'Ada Lovelace', 'bidi controls removed')
  t.equal(
    cleanLine('A\u0000d\u0007a\u007F\u0081\u200B\uFEFF\u2060\u00AD\u3164\u{E0041}'),
    'Ada',
    'controls, format and default-ignorables removed',
  )
  t.equal(cleanLine('مهرداد\u200Cزاده'), 'مهرداد\u200Cزاده', 'the zero-width non-joiner of a Persian name stays')
  t.equal(cleanLine('👩\u200D🎨 ❤\uFE0F'), '👩\u200D🎨 ❤\uFE0F', 'joiners and variation selectors of emoji stay')
  t.equal(
    cleanText(' one\r\ntwo\rthree\u2029four\u0085five\vsix\tseven\u0000\u202E '),
    'one\ntwo\nthree\nfour\nfive\nsix\tseven',
    'text keeps its lines (every spelling of a break is \\n) and tabs',
  )
  t.equal(cleanLine('a\ud800b'), 'ab', 'a lone surrogate is no character: removed')
  t.equal(
    visible('a\u202Eb\u2028c\u200Dd\uFE0Fe\u0085'),
    'a\\u202eb\\u2028c\\u200dd\\ufe0fe\\u0085',
    'an agent sees every invisible character escaped, the kept ones too',
  )
  t.equal(visible('tag\u{E0041}'), 'tag\\udb40\\udc41', 'a Unicode tag as its surrogate pair')
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const ch = String.fromCodePoint(cp)
    REMOVED.lastIndex = 0
    if (REMOVED.test(ch) && visible(ch) === ch) t.fail(`U+${cp.toString(16)} is removed from stored text but shown to agents as it is`)
  }
})
