/**
 * What the database holds, for the metrics: jobs by queue/type/status, each queue's due and
 * running jobs and the age of its oldest due job, and the live workers — read at a bounded
 * rate however often anything is scraped, by however many processes. Two rules bound it:
 * - in a process, a sample is reused until it is `intervalMs` old, and scrapes arriving while
 *   one is being taken share it;
 * - in a cluster, only the holder of the lock `leasehold:metrics-sampler` samples; the other
 *   processes export their in-process metrics only. The holder extends the lock with each
 *   sample, so a holder nobody scrapes lets it lapse and a scraped process takes it over; a
 *   process without it asks for it at most once per lock TTL (jittered).
 * A sample is the lock, the bounded summary (a capped count per status, then one grouping of
 * the statuses within the cap), health, workers and now: never a GROUP BY over every job.
 */
import { MAX_COUNT_CAP } from '../core/search.js';
import type { JobCount, QueueHealth, StatusTotal, Storage } from '../core/storage.js';
import type { Lock } from '../runtime/locks.js';
import { Locks } from '../runtime/locks.js';

export const SAMPLER_LOCK = 'leasehold:metrics-sampler';
export const DEFAULT_SAMPLE_INTERVAL_MS = 15_000;
/** five statements a sample: never more than one a second for the cluster */
export const MIN_SAMPLE_INTERVAL_MS = 5_000;
/** a worker counts as live while its heartbeat is this recent (as `Client.unhandledJobs` counts) */
export const LIVE_WITHIN_MS = 60_000;

export interface DbSample {
  /** the process clock (ms) when it was taken */
  takenAt: number;
  /** by queue, type and status, for the statuses counted exactly */
  counts: JobCount[];
  /** every status's total; the ones past the cap are estimated (or the cap) and not in `counts` */
  totals: StatusTotal[];
  queues: QueueHealth[];
  liveWorkers: number;
}

export interface DbSamplerOptions {
  /** a sample is reused until it is this old (default 15 s, at least 5 s) */
  intervalMs?: number;
  /** told when sampling fails (the scrape then shows no database metrics) */
  onError?: (e: unknown) => void;
  /** the process clock in ms (tests) */
  clock?: () => number;
  random?: () => number;
}

export class DbSampler {
  readonly intervalMs: number;
  readonly #storage: Storage;
  readonly #locks: Locks;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #random: () => number;
  readonly #onError: (e: unknown) => void;
  #lock: Lock | null = null;
  /** what scrapes are answered with until `#nextAt`: null when this process does not sample */
  #last: DbSample | null = null;
  #nextAt = -Infinity;
  #pending: Promise<DbSample | null> | undefined;
  #closed = false;

  constructor(storage: Storage, opts: DbSamplerOptions = {}) {
    const interval = opts.intervalMs ?? DEFAULT_SAMPLE_INTERVAL_MS;
    if (!Number.isFinite(interval) || interval < MIN_SAMPLE_INTERVAL_MS) throw new TypeError(`the sampling interval must be at least ${MIN_SAMPLE_INTERVAL_MS} ms, got ${interval}`);
    this.intervalMs = interval;
    // four intervals: a holder scraped at all keeps it; one nobody scrapes lets it go
    this.#ttlMs = 4 * interval;
    this.#storage = storage;
    this.#locks = new Locks(storage);
    this.#clock = opts.clock ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#onError = opts.onError ?? (() => {});
  }

  /** Whether this process is the cluster's sampler (as of its last try). */
  get sampling(): boolean {
    return this.#lock !== null;
  }

  /** The current sample, taking one if it is due; null when another process samples. */
  sample(): Promise<DbSample | null> {
    if (this.#closed || this.#clock() < this.#nextAt) return Promise.resolve(this.#last);
    this.#pending ??= this.#take().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  /** Give the lock up, so another process samples at its next try. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#pending;
    const lock = this.#lock;
    this.#lock = null;
    if (lock) await this.#locks.release(lock).catch(() => false);
  }

  async #take(): Promise<DbSample | null> {
    const now = this.#clock();
    try {
      if (!(await this.#hold())) {
        this.#last = null;
        this.#nextAt = now + this.#ttlMs * (0.8 + 0.4 * this.#random());
        return null;
      }
      const s = this.#storage;
      const [summary, queues, workers, dbNow] = await Promise.all([s.queues.summary({ cap: MAX_COUNT_CAP }), s.queues.health(), s.workers.list(), s.now()]);
      const liveWorkers = workers.filter((w) => dbNow.getTime() - w.heartbeatAt.getTime() <= LIVE_WITHIN_MS).length;
      this.#last = { takenAt: now, counts: summary.groups, totals: summary.statuses, queues, liveWorkers };
    } catch (e) {
      // a database that fails is asked again after the interval, not at every scrape
      this.#last = null;
      this.#onError(e);
    }
    this.#nextAt = now + this.intervalMs;
    return this.#last;
  }

  /** Keep the lock (or take it when it lapsed or was never ours); false when another holds it. */
  async #hold(): Promise<boolean> {
    if (this.#lock && (await this.#locks.extend(this.#lock, this.#ttlMs))) return true;
    this.#lock = await this.#locks.tryAcquire(SAMPLER_LOCK, { ttlMs: this.#ttlMs });
    return this.#lock !== null;
  }
}
