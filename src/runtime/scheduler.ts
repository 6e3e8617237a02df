/**
 * The scheduler: every tick (with jitter, so many hosts do not stampede) it reads the enabled
 * schedules whose next_run_at has passed, decides which slots to enqueue (src/core/slots.ts:
 * misfire policy, grace), and performs it as ONE guarded write, `schedules.fire`: a
 * compare-and-set on next_run_at plus one job per slot under a unique (schedule, slot) key. Any
 * number of schedulers may run; for each slot exactly one of them wins and the rest change
 * nothing. Times come from the database clock (`storage.now()`), never this host's.
 */
import type { ScheduledJob, ScheduleInput, ScheduleRow, ScheduleSource } from '../core/index.js';
import { DEFAULT_JOB_DEFAULTS, ValidationError, defaultGraceMs, planSlots } from '../core/index.js';
import type { Storage } from '../core/storage.js';
import { nextAfterFor, periodAround, validateSchedule } from './cron.js';
import type { Logger } from './env.js';
import { LocalBus, defaultLogger } from './env.js';
import type { JobRegistry } from './job-definition.js';
import { Ticker } from './ticker.js';

/** What a `Scheduler` takes (a worker makes one unless `scheduler: false`). */
export interface SchedulerOptions {
  /** where the schedules are */
  storage: Storage;
  /** job definitions: their timeout / max runtime apply to the jobs schedules enqueue */
  registry?: JobRegistry | null;
  /** schedules declared in code: synced on start (added, changed, removed by name) when given */
  schedules?: readonly ScheduleInput[];
  /** how often due schedules are looked for (default 1 s; ±20 % jitter) */
  intervalMs?: number;
  /** a slot later than this is a misfire (default: half the period, ≤ 60 s, ≥ 3 ticks) */
  graceMs?: number;
  /** default: pino to stdout */
  logger?: Logger;
  /** the jitter's source (default Math.random) */
  random?: () => number;
}

/** The job a slot of `row` enqueues: the schedule's fields, the job type's timeouts. */
export function scheduledJobOf(row: ScheduleRow, registry?: JobRegistry | null): ScheduledJob {
  const def = registry?.get(row.type);
  const timeoutMs = def?.timeoutMs ?? DEFAULT_JOB_DEFAULTS.timeoutMs;
  return {
    queue: row.queue, type: row.type, payload: row.payload, priority: row.priority, maxAttempts: row.maxAttempts,
    timeoutMs, maxRuntimeMs: Math.max(def?.maxRuntimeMs ?? DEFAULT_JOB_DEFAULTS.maxRuntimeMs, timeoutMs),
  };
}

/** Validate declarations (nothing written on bad input) and compute each first slot from db now. */
export async function prepareSchedules(storage: Storage, inputs: readonly ScheduleInput[], source: ScheduleSource) {
  const specs = inputs.map((i) => validateSchedule(i));
  const names = new Set<string>();
  for (const s of specs) {
    if (names.has(s.name)) throw new ValidationError('INVALID_SCHEDULE', `schedule ${s.name} declared twice`);
    names.add(s.name);
  }
  const now = await storage.now();
  return specs.map((s) => ({ ...s, source, nextRunAt: nextAfterFor(s)(now) }));
}

/** Sync the code-declared set: add, change, and remove (by name) in one transaction. */
export async function syncSchedules(storage: Storage, inputs: readonly ScheduleInput[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
  return storage.schedules.sync({ items: await prepareSchedules(storage, inputs, 'code') });
}

/** Add or change one schedule by hand (CLI, admin). */
export async function upsertSchedule(storage: Storage, input: ScheduleInput, source: ScheduleSource = 'cli'): Promise<ScheduleRow> {
  const [row] = await storage.schedules.upsert({ items: await prepareSchedules(storage, [input], source) });
  return row as ScheduleRow;
}

/** Fires due schedules, each slot once across any number of schedulers (see the file's header). */
export class Scheduler {
  readonly #storage: Storage;
  readonly #opts: SchedulerOptions;
  readonly #intervalMs: number;
  readonly #random: () => number;
  readonly log: Logger;
  readonly #ticker: Ticker;
  #failing = false;
  #ticking: Promise<number> | null = null;
  #synced = false;

  constructor(opts: SchedulerOptions) {
    this.#storage = opts.storage;
    this.#opts = opts;
    this.#intervalMs = opts.intervalMs ?? 1_000;
    if (!Number.isFinite(this.#intervalMs) || this.#intervalMs < 10) throw new ValidationError('INVALID_OPTION', 'scheduler intervalMs must be >= 10');
    this.#random = opts.random ?? Math.random;
    this.#ticker = new Ticker(this.#intervalMs, this.#random, () => this.tick());
    this.log = opts.logger ?? defaultLogger();
  }

  /** Sync the schedules declared in code (once; nothing when none were given). */
  async sync(): Promise<void> {
    if (this.#synced || !this.#opts.schedules) return;
    const r = await syncSchedules(this.#storage, this.#opts.schedules);
    this.#synced = true;
    this.log.info({ event: 'schedules.synced', schedules: r.schedules.map((s) => s.name), removed: r.removed }, 'schedules synced');
  }

  /** Sync declared schedules (if any), then tick until stop(). */
  async start(): Promise<void> {
    await this.sync();
    this.#ticker.start();
  }

  /** Stop ticking and wait for a tick under way. */
  async stop(): Promise<void> {
    this.#ticker.stop();
    await this.#ticking?.catch(() => 0);
  }

  /** One pass over due schedules; returns how many jobs this scheduler enqueued. Never throws. */
  tick(): Promise<number> {
    this.#ticking ??= this.#tick().finally(() => (this.#ticking = null));
    return this.#ticking;
  }

  async #tick(): Promise<number> {
    try {
      let enqueued = 0;
      for (let round = 0; round < 10; round++) {
        const due = await this.#storage.schedules.due({ limit: 100 });
        if (due.length === 0) break;
        const now = await this.#storage.now();
        for (const row of due) enqueued += await this.#fire(row, now);
        if (due.length < 100) break;
      }
      if (this.#failing) this.log.info({ event: 'scheduler.recovered' }, 'scheduler reaches the database again');
      this.#failing = false;
      if (enqueued > 0) LocalBus.for(this.#storage).jobsEnqueued();
      return enqueued;
    } catch (e) {
      if (!this.#failing) this.log.error({ event: 'scheduler.failed', err: (e as Error).message }, 'scheduler tick failed; will retry');
      this.#failing = true;
      return 0;
    }
  }

  async #fire(row: ScheduleRow, now: Date): Promise<number> {
    if (row.nextRunAt === null) return 0;
    let next;
    try {
      next = nextAfterFor(row);
    } catch (e) {
      this.log.error({ event: 'schedule.invalid', schedule: row.name, err: (e as Error).message }, 'schedule cannot be evaluated; skipped');
      return 0;
    }
    const grace = this.#opts.graceMs ?? defaultGraceMs(periodAround(next, row.nextRunAt), this.#intervalMs);
    const plan = planSlots({ policy: row.misfire, windowMs: row.misfireWindowMs, max: row.misfireMax }, row.nextRunAt, now, next, grace);
    if (!plan) return 0;
    const r = await this.#storage.schedules.fire({
      name: row.name, expectedNextRunAt: row.nextRunAt, nextRunAt: plan.nextRunAt, slots: plan.fire, job: scheduledJobOf(row, this.#opts.registry),
    });
    if (!r.applied) return 0;
    const skipped = plan.fire.length === 0 ? 'all missed slots skipped' : `${plan.fire.length} slot(s) enqueued`;
    this.log.info(
      { event: 'schedule.fired', schedule: row.name, slots: plan.fire.map((d) => d.toISOString()), jobIds: r.jobIds, duplicates: r.duplicates, nextRunAt: plan.nextRunAt?.toISOString() ?? null },
      `schedule ${row.name}: ${skipped}`,
    );
    return r.jobIds.length;
  }
}
