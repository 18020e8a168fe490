// The scale-out mode's Redis: a redis-server of the bench's own (a spare port, nothing on disk),
// so it can be frozen, killed and restarted under load; and the servers' metrics it is read by.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { freePort, request, sleep, track } from '../../lib/processes.js'

export interface RedisServer {
  port: number
  url: string
  pid(): number
  start(): Promise<void>
  kill(): Promise<void>
  freeze(): void
  thaw(): void
}

export async function redisServer(): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => child?.pid ?? 0,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: 'ignore',
      })
      track(child)
      for (let i = 0; i < 200; i++) {
        if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG') return
        await sleep(50)
      }
      throw new Error('redis-server did not start')
    },
    async kill() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return
      const c = child
      c.kill('SIGCONT')
      c.kill('SIGKILL')
      await once(c, 'exit')
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  }
  await server.start()
  return server
}

/**
 * A metric from a server's /metrics listener, summed over the series whose labels contain
 * `label`; NaN when the server has no such metric (an older build).
 */
export async function metric(port: number, name: string, label?: string): Promise<number> {
  const reply = await request(port, { path: '/metrics' })
  let sum = Number.NaN
  for (const line of reply.body.toString().split('\n')) {
    const m = /^(\w+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (m?.[1] === name && (label === undefined || m[2]?.includes(label))) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3])
  }
  return sum
}
