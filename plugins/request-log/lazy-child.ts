// Fastify gives every request a child logger bound to its id, made as the request arrives:
// pino builds the child and serializes its bindings for each of them, although most requests log
// only their one line (written with the id by the request-log plugin, on the app's logger). The
// child is made here on first use instead, so a request that logs nothing else pays nothing.
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

class LazyChild {
  private made: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  /** Logs at `level`; a level the logger drops makes no child. */
  private log(level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return
    ;(this.real[level] as (...a: unknown[]) => void)(...args)
  }

  get level(): string {
    return this.made?.level ?? this.parent.level
  }

  set level(level: string) {
    this.real.level = level
  }

  // Methods on the prototype: nothing is allocated per request but the object itself.
  fatal(...args: unknown[]): void {
    this.log('fatal', args)
  }
  error(...args: unknown[]): void {
    this.log('error', args)
  }
  warn(...args: unknown[]): void {
    this.log('warn', args)
  }
  info(...args: unknown[]): void {
    this.log('info', args)
  }
  debug(...args: unknown[]): void {
    this.log('debug', args)
  }
  trace(...args: unknown[]): void {
    this.log('trace', args)
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options)
  }

  isLevelEnabled(level: string): boolean {
    return ((this.made as Logger | undefined) ?? this.parent).isLevelEnabled(level)
  }
}

/** Fastify's childLoggerFactory for a pino logger (app.ts sets it only then): the request's logger, made on first use. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChild(logger as Logger, bindings, options) as unknown as FastifyBaseLogger
}
