/**
 * `createTestApp`: a client and the real worker on the memory storage, whose clock the test
 * moves. `runUntilIdle()` drains the worker until no job is due; a failed job's retry is made
 * due by moving the clock to its run time (the backoff is skipped, not shortened), so a test of
 * retries neither waits nor depends on timers.
 */
import { pino } from 'pino';
import type { JobQuery, JobRow } from '../core/storage.js';
import { type Client, createClient } from '../runtime/client.js';
import type { Logger } from '../runtime/env.js';
import type { JobList, JobTypeName, ScheduleFor } from '../runtime/job-types.js';
import { Worker, type WorkerOptions } from '../runtime/worker.js';
import { MemoryStorage } from '../storage/memory/index.js';

/** The database clock of a test app: it stands still unless the test moves it. */
export interface TestClock {
  /** the current time, epoch ms */
  now(): number;
  /** move forward by `ms` (schedules and delayed jobs then due run at the next `runUntilIdle`) */
  advance(ms: number): void;
  /** jump to a time (forward only: the database clock never goes back) */
  set(to: Date | number): void;
}

/** Options for `createTestApp`. */
export interface TestAppOptions<J extends JobList> {
  /** the app's job definitions: the client's and the worker's list */
  jobs: J;
  /** schedules declared in code, synced at each `runUntilIdle` */
  schedules?: readonly ScheduleFor<J>[];
  /** where the clock starts (default: the real time when the app is made) */
  now?: Date | number;
  /** the worker's and handlers' logger (default: silent) */
  logger?: Logger;
  /** other worker options (concurrency, queues…); `random` (retry jitter) defaults to 0.5, so retry times repeat */
  worker?: Omit<WorkerOptions, 'storage' | 'jobs' | 'schedules' | 'logger'>;
}

/** Options for {@link TestApp.runUntilIdle}. */
export interface RunUntilIdleOptions {
  /** move the clock to a failed job's next attempt and run it (default true); false leaves retries waiting */
  skipBackoff?: boolean;
  /** the longest a round of draining may take before this throws (default 10 s) */
  maxMs?: number;
  /** at most this many rounds of draining, then this throws: a job that keeps retrying (default 100) */
  maxRounds?: number;
}

/** What the runs of one `runUntilIdle` did: attempts by outcome (succeeded, failed, dead, snoozed…). */
export interface IdleReport {
  /** attempts run */
  processed: number;
  /** attempts by how they ended */
  outcomes: Record<string, number>;
}

/** A client and the real worker on the memory storage, with a clock the test moves; from `createTestApp`. */
export interface TestApp<J extends JobList = JobList> {
  /** the job definitions it was made with */
  readonly jobs: J;
  /** the memory storage under the client and the worker */
  readonly storage: MemoryStorage;
  /** the app's client, typed by `jobs` */
  readonly client: Client<J>;
  /** the storage's clock: it moves only when the test (or a retry in `runUntilIdle`) moves it */
  readonly clock: TestClock;
  /** Run due jobs (and the retries of those that fail) until none is due; resolves to what ran. */
  runUntilIdle(opts?: RunUntilIdleOptions): Promise<IdleReport>;
  /** Every job of `type` (every job when omitted) enqueued so far, oldest first, in its current state. */
  enqueued(type?: JobTypeName<J>): Promise<JobRow[]>;
  /** Close the storage. */
  close(): Promise<void>;
}

function testClock(start: number): TestClock {
  let now = start;
  const set = (to: number) => {
    if (!Number.isFinite(to) || to < now) throw new RangeError(`the test clock only moves forward: ${new Date(now).toISOString()} to ${String(to)}`);
    now = to;
  };
  return { now: () => now, advance: (ms) => set(now + ms), set: (to) => set(typeof to === 'number' ? to : to.getTime()) };
}

/** Every job that matches, oldest first (the listing is newest first, a page at a time). */
async function allJobs(client: Pick<Client, 'listJobs'>, query: Pick<JobQuery, 'type' | 'status'>): Promise<JobRow[]> {
  const out: JobRow[] = [];
  for (let beforeId: string | undefined; ; ) {
    const page = await client.listJobs({ ...query, beforeId, limit: 1000 });
    out.push(...page);
    if (page.length < 1000) return out.reverse();
    beforeId = page[page.length - 1]?.id;
  }
}

/** An in-memory app: `await t.client.enqueue(...)`, then `await t.runUntilIdle()`. */
export function createTestApp<const J extends JobList>(opts: TestAppOptions<J>): TestApp<J> {
  const clock = testClock(opts.now === undefined ? Date.now() : new Date(opts.now).getTime());
  const storage = new MemoryStorage({ clock: clock.now });
  const client = createClient({ storage, jobs: opts.jobs });
  const logger = opts.logger ?? pino({ level: 'silent' });
  const migrated = storage.migrate();

  async function runUntilIdle(o: RunUntilIdleOptions = {}): Promise<IdleReport> {
    await migrated;
    const report: IdleReport = { processed: 0, outcomes: {} };
    const maxRounds = o.maxRounds ?? 100;
    for (let round = 1; ; round++) {
      // a worker drains once: each round is a fresh one on the same storage
      const worker = new Worker({ retention: false, random: () => 0.5, ...opts.worker, storage, jobs: opts.jobs, logger, ...(opts.schedules ? { schedules: opts.schedules } : {}) });
      const drained = await worker.drain({ maxMs: o.maxMs ?? 10_000 });
      report.processed += drained.processed;
      for (const [k, n] of Object.entries(drained.outcomes)) report.outcomes[k] = (report.outcomes[k] ?? 0) + n;
      if (drained.timedOut) throw new Error(`runUntilIdle: jobs still running after ${o.maxMs ?? 10_000} ms (${JSON.stringify(report.outcomes)})`);
      const retry = o.skipBackoff === false ? undefined : await nextRetry(client, clock.now());
      if (retry === undefined) return report;
      if (round >= maxRounds) throw new Error(`runUntilIdle: jobs still retrying after ${maxRounds} rounds (${JSON.stringify(report.outcomes)})`);
      clock.set(retry);
    }
  }

  return {
    jobs: opts.jobs,
    storage,
    client,
    clock,
    runUntilIdle,
    enqueued: async (type) => {
      await migrated;
      return allJobs(client, { type });
    },
    close: async () => {
      await migrated;
      await storage.close();
    },
  };
}

/** The earliest run time of a failed job waiting for its retry, if any (one due now was left by the worker: a paused queue). */
async function nextRetry(client: Pick<Client, 'listJobs'>, now: number): Promise<number | undefined> {
  let next: number | undefined;
  for (const j of await allJobs(client, { status: 'failed' })) {
    const at = j.runAt.getTime();
    if (at > now && (next === undefined || at < next)) next = at;
  }
  return next;
}
