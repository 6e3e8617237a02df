/**
 * Batches fenced finishes: everything that finishes while writes are in flight goes into the
 * next write, so under load one statement lands many results and when idle a result lands
 * at once. Results come back per job: a finish whose lease was lost reports applied=false.
 */
import { retrying } from '../core/backoff.js';
import type { RetryPolicy } from '../core/retry.js';
import type { FinishParams, FinishResult, Storage } from '../core/storage.js';
import { type BatchSink, Batcher } from './batcher.js';
import type { Logger } from './env.js';

/** Who is told how a finish went: the worker's attempts are sinks themselves, so no promise is made per job. */
export type FinishSink = BatchSink<FinishResult>;

/** A failed write is tried again over a few seconds (a server restart) before its callers hear of it. */
const FINISH_RETRY: RetryPolicy = { kind: 'exponential', baseMs: 100, factor: 4, maxMs: 3_000, jitter: 'equal' };
const FINISH_TRIES = 5;

export class Completer {
  readonly #batcher: Batcher<FinishParams, FinishResult>;

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
  ) {
    this.#batcher = new Batcher({
      write: (batch) => this.#write(batch),
      maxBatch: 500,
      // a second write while the first commits keeps slots from waiting on lease releases;
      // batches hold disjoint jobs and lock their rows in id order, so two never deadlock
      maxWrites: 2,
      // every statement costs a round trip and a commit: a small batch waits for the write in flight
      minSecondBatch: 100,
      // finishes from the same turn of the event loop join the first batch
      defer: (run) => setImmediate(run),
    });
  }

  finish(params: FinishParams): Promise<FinishResult> {
    return this.#batcher.ask(params);
  }

  /** Queue a finish; `sink` hears how it went. */
  submit(params: FinishParams, sink: FinishSink): void {
    this.#batcher.submit(params, sink);
  }

  /** Resolves once everything queued so far is written. */
  idle(): Promise<void> {
    return this.#batcher.idle();
  }

  /**
   * Finishes are fenced, so writing one twice cannot apply twice. If the database stays away,
   * the callers get the error and the leases lapse; the sweeper brings those jobs back.
   */
  async #write(batch: FinishParams[]): Promise<FinishResult[]> {
    const results = await retrying(() => this.storage.leases.finish({ items: batch }), {
      policy: FINISH_RETRY,
      attempts: FINISH_TRIES,
      onRetry: (e, attempt, retryInMs) => {
        if (attempt === 1) this.log.warn({ event: 'finish.retrying', jobs: batch.length, err: (e as Error).message, retryInMs }, 'finish write failed; retrying');
      },
    });
    return batch.map((p, i) => results[i] ?? { id: p.id, applied: false });
  }
}
