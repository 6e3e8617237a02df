/**
 * Batches fenced finishes: everything that finishes while a write is in flight goes into the
 * next write, so under load one transaction lands many results and when idle a result lands
 * at once. Results come back per job: a finish whose lease was lost reports applied=false.
 */
import type { FinishParams, FinishResult, Storage } from '../core/storage.js';
import type { Logger } from './env.js';

interface Pending {
  params: FinishParams;
  resolve: (r: FinishResult) => void;
  reject: (e: unknown) => void;
}

const MAX_BATCH = 200;
const RETRY_MS = [50, 200, 1_000, 3_000];

export class Completer {
  #queue: Pending[] = [];
  #flushing: Promise<void> | null = null;

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
  ) {}

  finish(params: FinishParams): Promise<FinishResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ params, resolve, reject });
      if (!this.#flushing) this.#flushing = this.#drain();
    });
  }

  /** Resolves once everything queued so far is written. */
  async idle(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    // Let finishes from the same tick join the first batch.
    await new Promise((r) => setImmediate(r));
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        await this.#write(batch);
      }
    } finally {
      this.#flushing = null;
    }
  }

  /**
   * A failed write is retried a few times: finishes are fenced, so writing one twice cannot
   * apply twice. If the database stays away, the callers get the error and the leases lapse;
   * the sweeper brings those jobs back.
   */
  async #write(batch: Pending[]): Promise<void> {
    for (let i = 0; ; i++) {
      try {
        const results = await this.storage.finishJobs(batch.map((p) => p.params));
        batch.forEach((p, j) => p.resolve(results[j] ?? { id: p.params.id, applied: false }));
        return;
      } catch (e) {
        const wait = RETRY_MS[i];
        if (wait === undefined) {
          for (const p of batch) p.reject(e);
          return;
        }
        if (i === 0) this.log.warn({ event: 'finish.retrying', jobs: batch.length, err: (e as Error).message, retryInMs: wait }, 'finish write failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
