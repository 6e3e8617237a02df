/**
 * A worker's concurrency slots: starts buffered jobs while slots are free, runs each as an
 * Attempt, and hears when its handler freed the slot and when the attempt is over. Nothing
 * starts once the worker no longer accepts jobs (stop() was called). The worker (worker.ts)
 * claims and shuts down; cluster-wide limits were applied by the claim.
 */
import { nextAvgRunMs } from '../core/index.js';
import type { Storage } from '../core/storage.js';
import { Attempt, type AttemptDeps } from './attempt.js';
import { AttemptClock } from './attempt-clock.js';
import type { Completer } from './completer.js';
import { EffectBatcher } from './effect-batcher.js';
import type { Logger } from './env.js';
import { type Heartbeater, leaseSafetyMargin } from './heartbeater.js';
import type { JobDefinition, JobRegistry } from './job-definition.js';
import type { Observers } from './observer.js';
import type { Wakeup } from './wakeup.js';
import type { JobLease, LeaseBook } from './worker-leases.js';

export interface SlotsDeps {
  storage: Storage;
  completer: Completer;
  leases: LeaseBook;
  registry: JobRegistry;
  heartbeater: Pick<Heartbeater, 'beat'>;
  log: Logger;
  random: () => number;
  concurrency: number;
  leaseMs: number;
  abortGraceMs: number;
  /** `ctx.progress` writes at most once per this many ms */
  progressIntervalMs: number;
  /** the worker's "something changed" signal: woken when a slot frees or an attempt ends */
  wake: Wakeup;
  /** whether jobs may start (false once stop() was called) */
  accepting: () => boolean;
  /** metrics and tracing, when any */
  observer: Observers | undefined;
}

export class Slots {
  /** attempts not yet over: running, or finished with their outcome still being written */
  readonly running = new Map<string, Attempt>();
  /** the time limits of the running attempts: one timer for all */
  readonly clock = new AttemptClock(() => this.running.values());
  /** jobs whose handler holds a concurrency slot (their finish may still be in flight after) */
  executing = 0;
  /** moving average of handler run time in ms (null until a job ran) */
  avgRunMs: number | null = null;
  /** attempts over, by outcome */
  readonly outcomes: Record<string, number> = {};
  /** jobs handed back after their handler stopped at shutdown, and those left to lapse */
  readonly ended: Record<'handed_back' | 'abandoned', string[]> = { handed_back: [], abandoned: [] };
  /** What every attempt shares (made once: per job it was a closure apiece). */
  #attemptDeps: AttemptDeps | undefined;

  constructor(private readonly d: SlotsDeps) {}

  /** Start buffered jobs while slots are free; never once the worker stopped accepting. */
  dispatch(): void {
    const d = this.d;
    while (this.executing < d.concurrency && d.accepting()) {
      const entry = d.leases.next();
      if (!entry) return;
      const def = d.registry.get(entry.job.type);
      if (!def) continue; // cannot happen: we only claim registered types
      this.#launch(entry, def);
    }
  }

  #launch(entry: JobLease, def: JobDefinition<unknown>): void {
    const d = this.d;
    const attempt = new Attempt(entry.job, def, (this.#attemptDeps ??= {
      storage: d.storage,
      effects: new EffectBatcher(d.storage),
      completer: d.completer,
      clock: this.clock,
      renew: async (a) => !(await d.heartbeater.beat([a.lease])).has(a.job.id),
      leaseMarginMs: leaseSafetyMargin(d.leaseMs),
      log: d.log,
      random: d.random,
      abortGraceMs: d.abortGraceMs,
      slotFreed: (a) => this.#slotFreed(performance.now() - a.launchedAt),
      ended: (a, outcome) => this.#done(a, outcome),
      progressIntervalMs: d.progressIntervalMs,
    }), entry);
    entry.attempt = attempt;
    this.executing++;
    this.running.set(entry.job.id, attempt);
    if (!d.observer) return attempt.start();
    attempt.observed = d.observer.launch(entry.job, attempt);
  }

  /**
   * The handler is done with its slot: the next job may start while this one's finish is
   * still being written (its lease stays held and heartbeated until then).
   */
  #slotFreed(runMs: number): void {
    this.executing--;
    this.avgRunMs = nextAvgRunMs(this.avgRunMs, runMs);
    this.dispatch();
    this.d.wake.wake();
  }

  /** The attempt is over: its lease is given up, and the next job may start. */
  #done(attempt: Attempt, outcome: string): void {
    const lease = this.d.leases.get(attempt.job.id);
    if (lease?.attempt === attempt) this.d.leases.release(lease);
    if (outcome === 'handed_back' || outcome === 'abandoned') this.ended[outcome].push(attempt.job.id);
    this.running.delete(attempt.job.id);
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
    const seen = attempt.observed;
    if (seen) {
      attempt.observed = undefined;
      this.d.observer?.ended(seen, { outcome, durationMs: Date.now() - attempt.startedAt, error: attempt.error });
    }
    this.dispatch();
    this.d.wake.wake();
  }
}
