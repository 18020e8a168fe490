#!/usr/bin/env node
// The `studio` command (package.json's bin: `npx studio <area> <command>`): scripts/studio.ts run
// from the sources through tsx, as `npm run <area> -- …` runs it, so it never runs a stale build.
import { register } from 'tsx/esm/api'

register()
await import('./studio.ts')
