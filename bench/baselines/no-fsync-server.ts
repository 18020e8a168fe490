// The API with fsync off, for the benchmark's durability price (submitLead durable ÷ fsync off).
// The only way to start it: no configuration variable turns fsync off in a deployed server.
import { start } from '../../server.js'

await start({ unsafeNoFsync: true })
