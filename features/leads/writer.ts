// Group commit: leads that arrive together are stored in one transaction, so one fsync covers
// them all, and each caller's promise settles only after that commit (or its failure).
import type { IdempotencyClaim, LeadsRepository, NewLead, StoredBatch } from './repository.js'

interface Pending {
  lead: NewLead
  claim: IdempotencyClaim | undefined
  resolve: (stored: boolean) => void
  reject: (err: unknown) => void
}

export class LeadWriter {
  private queue: Pending[] = []
  private draining: Promise<void> | undefined

  constructor(
    private readonly repo: LeadsRepository,
    private readonly claimCutoff: () => string,
    /** Called after each commit with what it stored. */
    private readonly onStored: (batch: StoredBatch) => void = () => {},
    private readonly maxBatch = 500,
  ) {}

  /**
   * Stores the lead; true once committed, false when its idempotency key was taken by a
   * concurrent request (nothing stored). Rejects when the commit failed (nothing stored).
   */
  write(lead: NewLead, claim?: IdempotencyClaim): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ lead, claim, resolve, reject })
      // Start on the next turn of the event loop, so the leads read in this turn share a commit.
      this.draining ??= new Promise<void>((done) => setImmediate(() => this.drain().finally(done)))
    })
  }

  /** Resolves when everything queued so far is committed (graceful shutdown). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch)
        const claims = new Map<string, IdempotencyClaim>()
        for (const p of batch) if (p.claim) claims.set(p.lead.id, p.claim)
        try {
          const stored = await this.repo.insertBatch(
            batch.map((p) => p.lead),
            claims,
            this.claimCutoff(),
          )
          for (const p of batch) p.resolve(!stored.lost.has(p.lead.id))
          this.onStored(stored)
        } catch (err) {
          for (const p of batch) p.reject(err)
        }
      }
    } finally {
      this.draining = undefined
    }
  }
}
