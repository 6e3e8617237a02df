/**
 * Per-type cluster-wide concurrency (`JobDefinition.globalConcurrency`), built on the lock API:
 * before a capped job runs, its worker takes a slot of the semaphore `jobtype:<type>` (TTL = the
 * lease, extended with it). No slot free: the job goes back to the queue due shortly, its
 * attempt not counted, so jobs over the cap stay queued. Released when the attempt ends; a
 * crashed worker's slot lapses at its TTL, as its job's lease does.
 */
import type { ClaimedJob, FinishParams, FinishResult, Storage } from '../core/storage.js';
import type { Logger } from './env.js';
import type { Lock } from './locks.js';
import { Locks } from './locks.js';

/** How long a job over its type's cap waits before it is due again (jittered ±50 %). */
export const CAPPED_RETRY_MS = 500;

export class TypeCaps {
  readonly #locks: Locks;

  constructor(
    storage: Storage,
    owner: string,
    private readonly leaseMs: number,
    private readonly finish: (p: FinishParams) => Promise<FinishResult>,
    private readonly log: Logger,
    private readonly random: () => number,
  ) {
    this.#locks = new Locks(storage, { owner });
  }

  /** A slot for this job, or null after handing the job back (over the cap, or the database failed). */
  async admit(job: ClaimedJob, cap: number): Promise<Lock | null> {
    try {
      const lock = await this.#locks.tryAcquire(`jobtype:${job.type}`, { ttlMs: this.leaseMs, slots: cap });
      if (lock) return lock;
    } catch (e) {
      this.log.warn({ event: 'job.cap_failed', jobId: job.id, type: job.type, err: (e as Error).message }, 'could not check the type cap; handing the job back');
    }
    const runAfterMs = Math.round(CAPPED_RETRY_MS * (0.5 + this.random()));
    await this.finish({ id: job.id, leaseToken: job.leaseToken, status: 'queued', runAfterMs, uncountAttempt: true, attempt: { outcome: 'snoozed' } }).catch(() => undefined);
    this.log.debug({ event: 'job.capped', jobId: job.id, type: job.type, cap, runAfterMs }, 'type at its global concurrency cap; job back in the queue');
    return null;
  }

  /** Extend the slot every third of the lease until the returned stop(); `onLost` when it is gone. */
  keep(lock: Lock, onLost: () => void): () => Promise<void> {
    let stopped = false;
    const timer = setInterval(() => {
      void this.#locks.extend(lock).then(
        (ok) => {
          if (!ok && !stopped) onLost();
        },
        () => undefined,
      );
    }, Math.max(10, Math.floor(this.leaseMs / 3)));
    return async () => {
      stopped = true;
      clearInterval(timer);
      await this.#locks.release(lock).catch(() => false);
    };
  }
}
