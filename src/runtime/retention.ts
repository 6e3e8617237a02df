/**
 * Retention: finished jobs (and their attempts) are deleted once they are older than the
 * policy says: succeeded after 7 days, dead and cancelled after 30, by default. One service
 * for every way leasehold runs: the worker's sweeper, `leasehold tick` and `leasehold prune`.
 *
 * A run deletes in batches of `batchSize` jobs, each its own short write starting after the last
 * job the previous one deleted, until a batch comes back short or the run's budget (`maxBatches`
 * per status, and the caller's `keepGoing`) is spent. After each batch it waits `pauseRatio`
 * times as long as the batch took: the process's claims and heartbeats never wait behind one long
 * delete, other processes' writes get the database's locks in between, and the claims beside it
 * flush less of the prune's log with their commits. The effect ledger is never pruned.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ValidationError } from '../core/index.js';
import type { PruneCursor, Storage } from '../core/storage.js';
import type { Logger } from './env.js';

/** How long finished jobs are kept before the sweeper deletes them (the Worker's `retention` option). */
export interface RetentionOptions {
  /** keep succeeded jobs this long (default 7 days); false keeps them for ever */
  succeededMs?: number | false;
  /** keep dead and cancelled jobs this long (default 30 days); false keeps them for ever */
  deadMs?: number | false;
  /** jobs deleted per write (default 1000) */
  batchSize?: number;
  /** batches per status in one run (default 100); what is left waits for the next run */
  maxBatches?: number;
  /**
   * after each batch, wait this many times as long as it took (default 3): the prune then
   * writes at most a quarter of the time, so the claims beside it share the database's log with
   * less; 0 deletes back to back
   */
  pauseRatio?: number;
}

const DAY = 86_400_000;
/** a pause of more than a hundred times the batch would stall whoever waits for the run */
export const MAX_PAUSE_RATIO = 100;

export const DEFAULT_RETENTION = { succeededMs: 7 * DAY, deadMs: 30 * DAY, batchSize: 1_000, maxBatches: 100, pauseRatio: 3 } as const;

export type PrunedStatus = 'succeeded' | 'dead' | 'cancelled';

/** One status and the age past which its jobs go. */
export interface RetentionRule {
  status: PrunedStatus;
  olderThanMs: number;
}

/** What bounds one run besides its budget of batches. */
export interface PruneRun {
  /** asked after each status's first batch: false ends the run (the rest waits for the next) */
  keepGoing?: () => boolean;
  /** ends the run at once, pause included (the worker stops) */
  signal?: AbortSignal;
}

export interface PruneReport {
  /** jobs deleted, by status */
  pruned: Record<PrunedStatus, number>;
  total: number;
  /** false when the budget ran out before every status's backlog was gone */
  complete: boolean;
}

function age(name: string, v: number | false | undefined, fallback: number): number | false {
  if (v === undefined) return fallback;
  if (v === false) return false;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ValidationError('INVALID_OPTION', `retention.${name} must be a number of ms >= 0 or false; got ${String(v)}`);
  return v;
}

function count(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (v !== Infinity && (!Number.isInteger(v) || v < 1)) throw new ValidationError('INVALID_OPTION', `retention.${name} must be an integer >= 1; got ${String(v)}`);
  return v;
}

function ratio(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !(v >= 0 && v <= MAX_PAUSE_RATIO)) throw new ValidationError('INVALID_OPTION', `retention.${name} must be a number from 0 to ${MAX_PAUSE_RATIO}; got ${String(v)}`);
  return v;
}

/** The statuses the policy prunes, each with its age; none when retention is off. Throws on a bad option. */
export function retentionRules(policy: RetentionOptions | false): RetentionRule[] {
  if (policy === false) return [];
  const succeeded = age('succeededMs', policy.succeededMs, DEFAULT_RETENTION.succeededMs);
  const dead = age('deadMs', policy.deadMs, DEFAULT_RETENTION.deadMs);
  const rules: RetentionRule[] = [];
  if (succeeded !== false) rules.push({ status: 'succeeded', olderThanMs: succeeded });
  if (dead !== false) rules.push({ status: 'dead', olderThanMs: dead }, { status: 'cancelled', olderThanMs: dead });
  return rules;
}

export class Retention {
  readonly rules: readonly RetentionRule[];
  readonly #batchSize: number;
  readonly #maxBatches: number;
  readonly #pauseRatio: number;

  constructor(
    private readonly storage: Storage,
    policy: RetentionOptions | false,
    private readonly log?: Logger,
    /** the batch clock and the pause between batches (tests) */
    private readonly pace: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<unknown> } = { now: () => performance.now(), sleep: (ms, signal) => sleep(ms, undefined, { signal }) },
  ) {
    this.rules = retentionRules(policy);
    this.#batchSize = policy === false ? 1 : count('batchSize', policy.batchSize, DEFAULT_RETENTION.batchSize);
    this.#maxBatches = policy === false ? 1 : count('maxBatches', policy.maxBatches, DEFAULT_RETENTION.maxBatches);
    this.#pauseRatio = policy === false ? 0 : ratio('pauseRatio', policy.pauseRatio, DEFAULT_RETENTION.pauseRatio);
  }

  /** Delete what is past retention, batch by batch, within the run's budget and `run`'s bounds. */
  async prune(run: PruneRun = {}): Promise<PruneReport> {
    const pruned: Record<PrunedStatus, number> = { succeeded: 0, dead: 0, cancelled: 0 };
    let complete = true;
    for (const rule of this.rules) {
      // each batch starts where the last one stopped; the next run starts from the oldest again, for jobs held back until then
      let after: PruneCursor | null = null;
      for (let batch = 0; ; batch++) {
        // every status gets a first batch, so a run squeezed by its caller still makes progress
        if (batch >= this.#maxBatches || run.signal?.aborted || (batch > 0 && run.keepGoing?.() === false)) {
          complete = false;
          break;
        }
        const started = this.pace.now();
        const done = await this.storage.jobs.pruneBatch({ statuses: [rule.status], olderThanMs: rule.olderThanMs, limit: this.#batchSize, after });
        pruned[rule.status] += done.deleted;
        after = done.cursor;
        if (done.deleted < this.#batchSize) break;
        // the budget's last batch needs no pause after it
        if (batch + 1 >= this.#maxBatches) continue;
        // at least a turn of the event loop (timers included) between two deletes; an abort is seen above
        await this.pace.sleep(this.#pauseRatio * (this.pace.now() - started), run.signal).catch(() => {});
      }
    }
    const total = pruned.succeeded + pruned.dead + pruned.cancelled;
    if (total > 0 || !complete) this.log?.info({ event: 'jobs.pruned', count: total, ...pruned, complete }, 'pruned finished jobs past retention');
    return { pruned, total, complete };
  }

  /** How many jobs a prune would delete now, by status (without the budget); deletes nothing. */
  async prunable(): Promise<Record<PrunedStatus, number>> {
    const out: Record<PrunedStatus, number> = { succeeded: 0, dead: 0, cancelled: 0 };
    for (const rule of this.rules) out[rule.status] = await this.storage.diagnostics.prunable({ statuses: [rule.status], olderThanMs: rule.olderThanMs });
    return out;
  }
}
