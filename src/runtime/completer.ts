/**
 * Batches fenced finishes: everything that finishes while writes are in flight goes into the
 * next write, so under load one statement lands many results and when idle a result lands
 * at once. Results come back per job: a finish whose lease was lost reports applied=false.
 */
import type { FinishParams, FinishResult, Storage } from '../core/storage.js';
import type { Logger } from './env.js';

/**
 * Who is told how a finish went. The worker's attempts are sinks themselves: a promise per
 * finish, with its two resolving functions and an executor, was a good part of what the
 * runtime allocated per job.
 */
export interface FinishSink {
  finished(result: FinishResult): void;
  finishFailed(error: unknown): void;
}

interface Pending {
  params: FinishParams;
  sink: FinishSink;
}

const MAX_BATCH = 500;
const RETRY_MS = [50, 200, 1_000, 3_000];
/**
 * Batches written at once. One write in flight made the completer the bottleneck of a drain
 * of short jobs: the finish statement ran back to back while the slots sat waiting for leases
 * to be released. Batches hold disjoint jobs and lock their rows in id order, so two writes
 * never deadlock each other.
 */
const MAX_WRITES = 2;
/**
 * A second write starts only for a batch at least this large; a smaller one waits for the write
 * in flight and grows meanwhile. Every statement costs a socket write and a commit, whatever
 * its size: many small batches cost more than a few large ones.
 */
const MIN_SECOND_BATCH = 100;

export class Completer {
  #queue: Pending[] = [];
  #writes = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
  ) {}

  finish(params: FinishParams): Promise<FinishResult> {
    return new Promise((resolve, reject) => this.submit(params, { finished: resolve, finishFailed: reject }));
  }

  /** Queue a finish; `sink` hears how it went. */
  submit(params: FinishParams, sink: FinishSink): void {
    this.#queue.push({ params, sink });
    if (!this.#scheduled) {
      // let finishes from the same tick join the first batch
      this.#scheduled = true;
      setImmediate(this.#onImmediate);
    }
  }

  readonly #onImmediate = (): void => {
    this.#scheduled = false;
    this.#pump();
  };

  /** Resolves once everything queued so far is written. */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#writes === 0 && !this.#scheduled) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  #pump(): void {
    while (this.#queue.length > 0 && (this.#writes === 0 || (this.#writes < MAX_WRITES && this.#queue.length >= MIN_SECOND_BATCH))) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      this.#writes++;
      void this.#write(batch).finally(() => {
        this.#writes--;
        this.#pump();
      });
    }
    if (this.#queue.length === 0 && this.#writes === 0 && !this.#scheduled) for (const r of this.#idle.splice(0)) r();
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
        batch.forEach((p, j) => p.sink.finished(results[j] ?? { id: p.params.id, applied: false }));
        return;
      } catch (e) {
        const wait = RETRY_MS[i];
        if (wait === undefined) {
          for (const p of batch) p.sink.finishFailed(e);
          return;
        }
        if (i === 0) this.log.warn({ event: 'finish.retrying', jobs: batch.length, err: (e as Error).message, retryInMs: wait }, 'finish write failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
