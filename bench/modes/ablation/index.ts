import type { Options } from '../../lib/types.js'

export async function ablationRun(_options: Options): Promise<void> {
  throw new Error('not yet')
}
