// The test's folder (tap's t.testdir), kept until the test's teardowns have run.
//
// tap removes a t.testdir folder when the test ends, and where that falls among the test's
// teardowns depends on which came first: a folder made before the test's first t.teardown is
// removed before every teardown runs. Most tests make their folder first and then start an app or
// a server in it, whose close is a teardown, so the folder went while they were still running:
// harmless for a database file that is merely unlinked, a race for anything still writing into
// the folder (a scheduled backup; CI saw the same race as ENOTEMPTY with a folder of its own).
// Registering a teardown first puts the removal after all of them. test/pure/folders.test.ts checks
// that this still holds for the tap installed.
import { existsSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'

const ordered = new WeakSet<Test>()

/** `t.testdir(content)`, removed only after every teardown of `t` (the apps and servers in it closed). */
export function testdir(t: Test, content?: Parameters<Test['testdir']>[0]): string {
  if (!ordered.has(t)) {
    ordered.add(t)
    t.teardown(() => {})
  }
  return t.testdir(content)
}

/**
 * A new folder of its own inside the test's folder. testdir(t) re-creates the test's folder on
 * every call, so a second call would wipe what the first put there (an app's database, a
 * certificate): the test's folder is made once, and each part takes a folder in it.
 */
export function subfolder(t: Test, prefix: string): string {
  if (!existsSync(t.testdirName)) testdir(t, {})
  return mkdtempSync(join(t.testdirName, prefix))
}
