// The studio's data files agree with each other: every style of the catalogue is described in the
// playbook and priced, and every city the studio has projects in can be estimated.
import { readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import t from 'tap'
import { catalogueFile, readCatalogueFile } from '../../features/catalogue/index.js'
import { matchKey } from '../../features/catalogue/names.js'
import { loadPlaybook, playbookFile } from '../../features/playbook/index.js'
import { Pricing } from '../../features/pricing/index.js'
import { loadPricingModel, pricingFile } from '../../features/pricing/model.js'
import { spec } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'

const projects = readCatalogueFile(spec)
const playbook = loadPlaybook(spec)
const pricing = new Pricing(spec, loadPricingModel(spec))
const options = pricing.options

t.test('every catalogue style is in the playbook and in the pricing model, and no other', async (t) => {
  const catalogueStyles = [...new Set(projects.flatMap((p) => p.styles))].sort()
  t.same(playbook.styles.map((s) => s.name).sort(), catalogueStyles, 'playbook styles')
  t.same([...options.styles].sort(), catalogueStyles, 'priced styles')
})

t.test('every city of the catalogue can be estimated, by its name with or without accents', async (t) => {
  for (const city of new Set(projects.map((p) => p.location.city))) {
    t.ok(options.cities.includes(city), `${city} is priced`)
    const plain = city.normalize('NFD').replace(/\p{Diacritic}/gu, '')
    t.equal(pricing.estimate({ area_sqm: 100, city: plain }).input.city, city, `"${plain}" is understood as ${city}`)
  }
})

t.test('one matching rule for names', async (t) => {
  t.equal(matchKey('Mid century  modern'), matchKey('Mid-Century Modern'))
  t.equal(matchKey('DEIA'), matchKey('Deià'))
  t.not(matchKey('Japandi'), matchKey('Wabi-Sabi'))
  t.equal(pricing.estimate({ area_sqm: 100, style: 'mid century modern', service_level: 'FULL SERVICE' }).input.style, 'Mid-Century Modern')
})

t.test('a data file that is not UTF-8 (saved as Latin-1, say) is refused, naming the file and the byte', async (t) => {
  const dir = testdir(t)
  const cases: [string, string, (file: string) => unknown][] = [
    ['catalogue', catalogueFile, (file) => readCatalogueFile(spec, file)],
    ['playbook', playbookFile, (file) => loadPlaybook(spec, file)],
    ['pricing model', pricingFile, (file) => loadPricingModel(spec, file)],
  ]
  for (const [label, shipped, load] of cases) {
    // The file as shipped, with Latin-1's é (0xe9) at the start of its first string.
    const text = readFileSync(shipped, 'utf8')
    const cut = text.indexOf('"') + 1
    const file = join(dir, basename(shipped))
    writeFileSync(file, Buffer.concat([Buffer.from(text.slice(0, cut)), Buffer.from([0xe9]), Buffer.from(text.slice(cut))]))
    t.throws(
      () => load(file),
      {
        message: `${file} is not UTF-8: byte ${Buffer.byteLength(text.slice(0, cut))} (0xe9) begins no UTF-8 character; save the file as UTF-8`,
      },
      `${label}: refused, naming the file and the byte`,
    )
    t.doesNotThrow(() => load(shipped), `${label}: the file as shipped is read`)
  }
})
