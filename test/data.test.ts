// The studio's data files agree with each other: every style of the catalogue is described in the
// playbook and priced, and every city the studio has projects in can be estimated.
import t from 'tap'
import { readCatalogueFile } from '../plugins/catalogue/index.js'
import { matchKey } from '../plugins/catalogue/names.js'
import { loadPlaybook } from '../plugins/playbook/index.js'
import { Pricing } from '../plugins/pricing/index.js'
import { loadPricingModel } from '../plugins/pricing/model.js'
import { spec } from './helpers/app.js'

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
