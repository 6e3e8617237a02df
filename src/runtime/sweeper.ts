/**
 * The sweeper: brings back jobs whose lease expired (a worker crashed, hung or was paused),
 * in small batches, each rescue a guarded write that lands only if the lease is still
 * expired, so two sweepers never rescue one job twice and a worker that finishes at the last
 * moment wins cleanly. It also prunes finished jobs past retention, forgets silent workers and
 * counts closed chart slots ahead of the dashboard's charts.
 */
import { DEFAULT_RETRY_POLICY, SWEEP_BATCH, decideRescue } from '../core/index.js';
import { ROLLUP_SLOTS_PER_SWEEP } from '../core/chart-rollups.js';
import type { Storage } from '../core/storage.js';
import { findUnhandled } from './client.js';
import type { Logger } from './env.js';
import type { JobRegistry } from './job-definition.js';
import { Retention, type RetentionOptions } from './retention.js';
import type { WorkerObserver } from './observer.js';

export type { RetentionOptions } from './retention.js';

export interface SweeperOptions {
  intervalMs: number;
  retention: RetentionOptions | false;
  /** workers silent this long are forgotten and their due jobs reported unhandled */
  workerSilenceMs: number;
  /** how often retention and the unhandled-jobs report run (default 60 s) */
  maintenanceEveryMs?: number;
}

export class Sweeper {
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  /** the tick under way, which stop() returns: the worker waits for it before its caller closes the storage */
  #ticking: Promise<void> = Promise.resolve();
  /** aborted by stop(): ends a prune mid-run, pause included */
  #stopping = new AbortController();
  #lastMaintenance = 0;
  #failing = false;
  #reportedUnhandled = '';
  readonly #retention: Retention;

  constructor(
    private readonly storage: Storage,
    private readonly registry: JobRegistry,
    private readonly log: Logger,
    private readonly random: () => number,
    private readonly opts: SweeperOptions,
    private readonly observer?: WorkerObserver,
  ) {
    // a bad retention option is the worker constructor's error, before anything starts
    this.#retention = new Retention(storage, opts.retention, log);
  }

  start(): void {
    this.#running = true;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    const loop = async () => {
      this.#ticking = this.tick();
      await this.#ticking;
      // a tick still out when stop() ran must not arm another
      if (!this.#running) return;
      // ±20 % jitter so sweepers on many hosts drift apart instead of firing together.
      this.#timer = setTimeout(loop, this.opts.intervalMs * (0.8 + 0.4 * this.random()));
    };
    this.#timer = setTimeout(loop, this.opts.intervalMs * this.random());
  }

  /** No tick starts after this; resolves when the one under way (its prune aborted) has ended. */
  stop(): Promise<void> {
    this.#running = false;
    this.#stopping.abort();
    clearTimeout(this.#timer);
    return this.#ticking;
  }

  async tick(): Promise<void> {
    try {
      await this.sweep();
      if (Date.now() - this.#lastMaintenance >= (this.opts.maintenanceEveryMs ?? 60_000)) {
        this.#lastMaintenance = Date.now();
        await this.maintain();
      }
      if (this.#failing) this.log.info({ event: 'sweep.recovered' }, 'sweeper reaches the database again');
      this.#failing = false;
    } catch (e) {
      if (!this.#failing) this.log.error({ event: 'sweep.failed', err: (e as Error).message, retryInMs: this.opts.intervalMs }, 'sweep failed; will retry');
      this.#failing = true;
    }
  }

  /**
   * Rescue expired leases, a batch at a time; returns how many were rescued. Only of the types
   * this worker has definitions for (without one it cannot know the type's onLeaseExpired or
   * retry policy), asked of the database so that expired leases of other types never fill the
   * batch. A job can only have been claimed by a worker that handles its type; that worker's
   * sweeper rescues it.
   */
  async sweep(maxBatches = 10): Promise<number> {
    let rescued = 0;
    // each batch stands alone, so a stopping worker waits for one at most
    for (let i = 0; i < maxBatches && (i === 0 || !this.#stopping.signal.aborted); i++) {
      const expired = await this.storage.leases.findExpired({ limit: SWEEP_BATCH, types: this.registry.types });
      const params = expired.map((lease) => {
        const def = this.registry.get(lease.type);
        return { id: lease.id, leaseToken: lease.leaseToken, ...decideRescue(lease, def?.onLeaseExpired ?? 'retry', def?.retry ?? DEFAULT_RETRY_POLICY, this.random) };
      });
      const results = params.length > 0 ? await this.storage.leases.finish({ items: params }) : [];
      let applied = 0;
      results.forEach((r, j) => {
        const p = params[j];
        const lease = expired[j];
        if (!r.applied || !p || !lease) return;
        applied++;
        this.observer?.rescued?.(lease.type);
        this.log.warn(
          { event: 'job.rescued', jobId: r.id, type: lease.type, attempt: lease.attempts, lockedBy: lease.lockedBy, status: p.status, nextDelayMs: p.runAfterMs ?? null },
          p.status === 'dead' ? 'expired lease: job is dead' : 'expired lease: job rescued for retry',
        );
      });
      rescued += applied;
      // a short page was the last; a full one that rescued nothing would come back the same
      if (expired.length < SWEEP_BATCH || applied === 0) break;
    }
    return rescued;
  }

  async maintain(): Promise<void> {
    // a prune gets about a sweep interval (at least 5 s), so rescues never wait long behind it
    const until = Date.now() + Math.max(this.opts.intervalMs, 5_000);
    const stopping = this.#stopping.signal;
    await this.#retention.prune({ keepGoing: () => Date.now() < until, signal: stopping });
    if (stopping.aborted) return;
    await this.storage.workers.prune({ silentForMs: this.opts.workerSilenceMs * 10 });
    const [due, workers, now] = await Promise.all([this.storage.queues.dueCounts(), this.storage.workers.list(), this.storage.now()]);
    const unhandled = findUnhandled(due.counts, workers, now, this.opts.workerSilenceMs);
    const key = JSON.stringify(unhandled);
    // Report when the picture changes, not every minute.
    if (unhandled.length > 0 && key !== this.#reportedUnhandled) {
      // capped: the read of due jobs stopped at its limit, so each `due` is a floor
      this.log.warn({ event: 'jobs.unhandled', unhandled, capped: !due.complete }, 'due jobs wait for a worker with a handler for their type');
    }
    this.#reportedUnhandled = key;
    // a few closed chart slots counted per pass, so a day or week chart reads them counted
    await this.storage.attempts.rollUp({ slots: ROLLUP_SLOTS_PER_SWEEP });
  }
}
