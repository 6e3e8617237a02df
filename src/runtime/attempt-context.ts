/**
 * The handler's view of its attempt (`ctx`): heartbeat, effects (`once`), success inside the
 * caller's transaction, signal and logger.
 *
 * One object per job whose functions are made the first time the handler reads them: most
 * handlers use none, and an object literal of closures and getters per job was a measurable
 * share of a short job's cost (allocation, then garbage collection while the jobs of a claim
 * batch are alive). Reading `ctx.heartbeat` (or destructuring it) gives a function bound to
 * this attempt, as before.
 */
import { retrying } from '../core/backoff.js';
import { FLOW_LIMITS, LeaseLostError, LeaseholdError, NotSupportedError, type RetryPolicy, validateEffectKey } from '../core/index.js';
import type { ClaimedJob, EffectRecord, Storage } from '../core/storage.js';
import type { Logger } from './env.js';
import type { EffectBatcher } from './effect-batcher.js';
import type { JobContext, ParentResult } from './job-definition.js';
import type { ProgressReporter } from './attempt-progress.js';

/** What the context needs from its attempt. */
export interface ContextHost {
  readonly job: ClaimedJob;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly storage: Storage;
  /** the worker's batched effect-ledger writes, shared by its attempts */
  readonly effects: Pick<EffectBatcher, 'reserve' | 'record'>;
  /** Progress was reported: throws the abort reason once aborted, else resets the inactivity timeout. */
  progress(): void;
  /** Throws the abort reason once the attempt was aborted. */
  throwIfAborted(): void;
  /** Renew the lease now; false when it is lost (and the attempt was aborted). */
  renew(): Promise<boolean>;
  /** Whether the lease surely holds now: its local expiry, less a margin, is still ahead. */
  leaseSurelyHeld(): boolean;
  /** A call found the lease gone: aborts the attempt (LEASE_LOST) and returns the error to throw. */
  leaseLost(what: string): Error;
  /** The success was written in the handler's transaction: nothing left to record. */
  succeededInTransaction(): void;
  /** `ctx.progress`'s coalescing writer */
  readonly reporter: Pick<ProgressReporter, 'report'>;
}

export class AttemptContext implements JobContext {
  #heartbeat: (() => Promise<void>) | undefined;
  #once: (<T>(key: string, fn: () => T | Promise<T>) => Promise<T>) | undefined;
  #succeed: ((tx: unknown) => Promise<void>) | undefined;
  #progress: ((value: unknown, note?: string) => void) | undefined;
  #parents: (() => Promise<ParentResult[]>) | undefined;

  constructor(readonly host: ContextHost) {}

  get job(): ClaimedJob {
    return this.host.job;
  }

  get attempt(): number {
    return this.host.job.attempts;
  }

  get signal(): AbortSignal {
    return this.host.signal;
  }

  get log(): Logger {
    return this.host.log;
  }

  get heartbeat(): () => Promise<void> {
    return (this.#heartbeat ??= () => heartbeat(this.host));
  }

  get once(): <T>(key: string, fn: () => T | Promise<T>) => Promise<T> {
    return (this.#once ??= (key, fn) => once(this.host, key, fn));
  }

  get progress(): (value: unknown, note?: string) => void {
    return (this.#progress ??= (value, note) => {
      this.host.progress();
      this.host.reporter.report(value, note);
    });
  }

  get parents(): () => Promise<ParentResult[]> {
    return (this.#parents ??= () => parentsOf(this.host.storage, this.host.job.id));
  }

  get succeedInTransaction(): (tx: unknown) => Promise<void> {
    return (this.#succeed ??= (tx) => succeedInTransaction(this.host, tx));
  }
}

async function heartbeat(host: ContextHost): Promise<void> {
  host.progress();
  if (!(await host.renew())) throw new LeaseLostError(host.job.id, 'heartbeat');
}

/** The parents of a workflow job with their results: its edges (kept when a parent is deleted), then each parent's row; a row gone reads as pruned. */
async function parentsOf(storage: Storage, jobId: string): Promise<ParentResult[]> {
  const { parents } = await storage.workflows.dependencies({ jobId, limit: FLOW_LIMITS.parents });
  const rows = await Promise.all(parents.map((id) => storage.jobs.get({ id })));
  return parents.map((id, i) => {
    const j = rows[i];
    return j ? { id, type: j.type, result: j.result } : { id, type: null, result: undefined, pruned: true };
  });
}

async function succeedInTransaction(host: ContextHost, tx: unknown): Promise<void> {
  const { storage, job } = host;
  if (!storage.capabilities.transactionalEnqueue) {
    throw new NotSupportedError('completing a job inside your transaction', storage.dialect);
  }
  const params = { id: job.id, leaseToken: job.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } };
  const [r] = await storage.leases.finish({ items: [params], tx });
  if (!r?.applied) throw host.leaseLost('completion');
  host.succeededInTransaction();
}

/**
 * The effect runs only under a reservation and a lease that surely holds right then: a
 * reservation answered after the lease may have lapsed (the process was paused while the answer
 * was in flight, and a sweeper may have given the job to another worker) is not acted on. The
 * one duplicate left: the lease is lost (or the worker dies) after `fn` started and before its
 * record lands; the next attempt then runs `fn` again.
 */
async function once<T>(host: ContextHost, key: string, fn: () => T | Promise<T>): Promise<T> {
  const { storage, effects, job } = host;
  validateEffectKey(key);
  host.throwIfAborted();
  const params = { key, jobId: job.id, leaseToken: job.leaseToken };
  const r = await effects.reserve(params);
  if (r.state === 'lost') throw host.leaseLost(`effect ${key}`);
  // Another live job holds this key right now; fail this attempt so it retries and then
  // finds the effect done (or free), rather than running the effect twice.
  if (r.state === 'busy') throw new LeaseholdError('EFFECT_BUSY', `effect ${key} is being performed by another job right now`);
  if (r.state === 'done') {
    host.log.info({ event: 'effect.skipped', key }, 'effect already recorded; skipped');
    return r.result as T;
  }
  await confirmLease(host, `effect ${key}`);
  // checked again in the step that calls fn: work queued behind the confirmation may have outlasted the lease
  if (!host.leaseSurelyHeld()) await confirmLease(host, `effect ${key}`);
  if (!host.leaseSurelyHeld()) throw host.leaseLost(`effect ${key}`);
  host.throwIfAborted();
  const result = await fn();
  const recorded = await recordEffect(storage, effects, { ...params, result: result === undefined ? null : result }).catch((e: unknown) => {
    host.log.error({ event: 'effect.unrecorded', key, err: (e as Error).message }, 'effect ran but its record could not be written; a retry of this job will run it again');
    throw e;
  });
  if (!recorded) {
    host.log.error({ event: 'effect.unrecorded', key }, 'effect ran but the lease was lost before it was recorded');
    throw host.leaseLost(`record of effect ${key}`);
  }
  return result;
}

/**
 * Resolves only while the lease surely holds: not aborted, and its local expiry (less a margin)
 * still ahead. Past it the lease may have lapsed (the process was paused, its event loop
 * stalled) and is renewed first; lost, the attempt is aborted and this throws.
 */
async function confirmLease(host: ContextHost, what: string): Promise<void> {
  host.throwIfAborted();
  if (host.leaseSurelyHeld()) return;
  const renewed = await host.renew();
  host.throwIfAborted();
  if (!renewed || !host.leaseSurelyHeld()) throw host.leaseLost(what);
}

/** A record write is tried again over a few seconds (a dropped connection, a restart) before once gives up. */
const RECORD_RETRY: RetryPolicy = { kind: 'exponential', baseMs: 100, factor: 4, maxMs: 3_000, jitter: 'equal' };

/**
 * Record a performed effect. The effect already happened, so a dropped connection must not
 * lose its record (the job's next attempt would perform it again): any error is retried — not
 * only those classified transient, since a driver may report a killed connection in its own
 * words — which is safe because the write is fenced by the lease and idempotent. A retry that
 * finds nothing pending asks whether the earlier write landed before its connection dropped.
 */
function recordEffect(storage: Storage, effects: ContextHost['effects'], p: EffectRecord): Promise<boolean> {
  return retrying(
    async (attempt) => {
      if (await effects.record(p)) return true;
      if (attempt === 1) return false;
      // the key alone, not the job's list of effects: a job may hold any number of them
      const effect = await storage.effects.get({ key: p.key });
      return effect !== null && effect.jobId === p.jobId && effect.state === 'done';
    },
    { policy: RECORD_RETRY, attempts: 5 },
  );
}
