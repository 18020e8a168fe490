// `npm run contract` as a command (the built CLI): --help says what it writes; a missing option is
// a usage error. (The check itself against a server: test/app/contract-command.test.ts.)
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { cliBundle } from '../helpers/bundles.js'

t.test('as a command: --help says what it writes; a missing option is a usage error', async (t) => {
  const run = promisify(execFile)
  const help = await run(process.execPath, [cliBundle(), 'contract', '--help'], { cwd: projectRoot })
  // commander wraps the description to the terminal's width
  const text = help.stdout.replace(/\s+/g, ' ')
  t.match(text, /What it writes on the deployment: one lead per run, named "Contract check"/)
  t.match(text, /It erases nothing/)
  const missing = await run(process.execPath, [cliBundle(), 'contract', '--base', 'http://127.0.0.1:1'], {
    cwd: projectRoot,
  }).catch((err: { code: number; stderr: string }) => err)
  t.equal((missing as { code: number }).code, 64)
  t.match((missing as { stderr: string }).stderr, /--client-id and --client-secret are required/)
})
