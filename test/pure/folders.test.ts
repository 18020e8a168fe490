// The helpers' testdir(t): the test's folder outlives the test's teardowns, so a teardown that
// closes an app or stops a server still finds the folder the app or server writes into.
import { existsSync } from 'node:fs'
import t from 'tap'
import { testdir } from '../helpers/folders.js'

const seen: Record<string, boolean> = {}

t.test('a folder made before any teardown', async (t) => {
  const dir = testdir(t, { 'studio.db': 'x' })
  t.teardown(() => {
    seen.before = existsSync(dir)
  })
  t.ok(existsSync(dir))
})

t.test('a folder made after a teardown', async (t) => {
  t.teardown(() => {
    seen.after = existsSync(dir)
  })
  const dir = testdir(t, {})
  t.ok(existsSync(dir))
})

t.test('both folders were still there when the teardowns ran', async (t) => {
  t.same(seen, { before: true, after: true })
})
