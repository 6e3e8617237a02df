/**
 * Shared helpers for the in-process runtime tests: storages of each kind (support-storages.ts),
 * a pino logger that writes into an array so tests can assert on events, bounded waits on
 * conditions, and a small harness that stops every worker and closes every storage.
 */
import { after, before, describe } from 'node:test';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { JobStatus } from '../../src/core/status.js';
import type { ClaimedJob, EffectParams, JobRow, Storage } from '../../src/core/storage.js';
import { Client } from '../../src/runtime/client.js';
import type { AnyJobDefinition } from '../../src/runtime/job-definition.js';
import type { WorkerOptions } from '../../src/runtime/worker.js';
import { Worker } from '../../src/runtime/worker.js';
import type { StorageKind } from './support-storages.js';
import { STORAGE_KINDS, kindOptions, openTestStorage } from './support-storages.js';

export type { StorageKind, TestStorage } from './support-storages.js';
export { SHARED_KINDS, STORAGE_KINDS, describeEachKind, kindOptions, openTestStorage } from './support-storages.js';

export interface LogEntry {
  level: number;
  event?: string;
  msg?: string;
  jobId?: string;
  [k: string]: unknown;
}

/** A pino logger that keeps every line (parsed) in `entries`. */
export class LogCapture {
  readonly entries: LogEntry[] = [];
  readonly logger: Logger;

  constructor() {
    const stream = { write: (line: string) => void this.entries.push(JSON.parse(line) as LogEntry) };
    this.logger = pino({ level: 'debug', base: null }, stream);
  }

  events(event: string, jobId?: string): LogEntry[] {
    return this.entries.filter((e) => e.event === event && (jobId === undefined || e.jobId === jobId));
  }

  count(event: string, jobId?: string): number {
    return this.events(event, jobId).length;
  }
}

/** Resolve once `predicate` is truthy; poll every 10 ms; fail with `what` after `timeoutMs`. */
export async function waitFor<T>(predicate: () => T | Promise<T>, timeoutMs: number, what = 'condition'): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await predicate();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= until) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    }
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A promise plus its resolve function, for handlers the test releases by hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * One test's world: a storage, a client, a log capture, and workers that are stopped at the
 * end. Worker defaults are tuned for fast tests (short poll, sweeper off unless asked for).
 */
export class Harness {
  readonly log = new LogCapture();
  readonly workers: Worker[] = [];
  client!: Client;
  storage!: Storage;
  /** another Storage on the same database, as another process would open (memory: the same one) */
  another!: () => Promise<Storage>;
  #cleanup: () => Promise<void> = async () => {};

  static async open(kind: StorageKind, jobs?: readonly AnyJobDefinition[]): Promise<Harness> {
    const h = new Harness();
    const { storage, cleanup, another } = await openTestStorage(kind);
    h.storage = storage;
    h.another = another;
    h.#cleanup = cleanup;
    h.client = new Client(jobs === undefined ? { storage } : { storage, jobs });
    return h;
  }

  async worker(jobs: readonly AnyJobDefinition[], opts: Partial<WorkerOptions> = {}): Promise<Worker> {
    const w = new Worker({
      storage: this.storage,
      jobs,
      concurrency: 2,
      pollIntervalMs: 20,
      leaseMs: 2_000,
      sweeper: false,
      abortGraceMs: 200,
      logger: this.log.logger,
      ...opts,
    });
    this.workers.push(w);
    await w.start();
    return w;
  }

  /** A client that knows these job types (their maxAttempts, queue, schema… apply at enqueue). */
  clientWith(jobs: readonly AnyJobDefinition[]): Client {
    return new Client({ storage: this.storage, jobs });
  }

  /** Start a worker for these jobs and return a client that knows them. */
  async serve(jobs: readonly AnyJobDefinition[], opts: Partial<WorkerOptions> = {}): Promise<{ client: Client; worker: Worker }> {
    const worker = await this.worker(jobs, opts);
    return { client: this.clientWith(jobs), worker };
  }

  /**
   * Claim the one due job of `type` as `workerId` (a "ghost" worker that never finishes it),
   * asking again while the claim comes back empty: another worker's claim may hold the row
   * locked for a moment (MySQL's locking scan passes over rows of other types too).
   */
  claimAs(workerId: string, type: string, leaseMs: number): Promise<ClaimedJob> {
    return waitFor(async () => (await this.storage.leases.claim({ workerId, types: [type], queues: null, limit: 1, leaseMs }))[0], 5_000, `a ${type} job to claim`);
  }

  job(id: string): Promise<JobRow> {
    return this.client.getJob(id);
  }

  /** Wait until the job has `status` (and, if given, `extra` holds); returns the row. */
  waitStatus(id: string, status: JobStatus | JobStatus[], timeoutMs = 5_000, extra?: (j: JobRow) => boolean): Promise<JobRow> {
    const want = Array.isArray(status) ? status : [status];
    let last: JobRow | null = null;
    return waitFor(
      async () => {
        const j = (last = await this.storage.jobs.get({ id }));
        return j && want.includes(j.status) && (!extra || extra(j)) ? j : null;
      },
      timeoutMs,
      `job ${id} to be ${want.join('|')}`,
    ).catch((e: unknown) => {
      const seen = last && { status: last.status, attempts: last.attempts, lastErrorCode: last.lastErrorCode, lockedBy: last.lockedBy, runAt: last.runAt };
      throw new Error(`${(e as Error).message}; last seen ${JSON.stringify(seen)}`);
    });
  }

  /** Wait until a log line with `event` (for `jobId`, if given) appeared `n` times. */
  waitEvent(event: string, jobId?: string, timeoutMs = 5_000, n = 1): Promise<LogEntry> {
    return waitFor(() => this.log.events(event, jobId)[n - 1], timeoutMs, `log event ${event}${jobId ? ` for job ${jobId}` : ''} x${n}`);
  }

  async totalJobs(): Promise<number> {
    return (await this.storage.queues.counts()).reduce((a, c) => a + c.count, 0);
  }

  async close(): Promise<void> {
    for (const w of this.workers) {
      let timer: NodeJS.Timeout | undefined;
      // a stop() that never returns fails the suite instead of holding the test process open
      const stuck = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`worker ${w.id}: stop() did not return within 15 s (inFlight ${w.inFlight})`)), 15_000);
      });
      try {
        await Promise.race([w.stop({ deadlineMs: 500 }), stuck]);
      } finally {
        clearTimeout(timer);
      }
    }
    await this.#cleanup();
  }
}

type Aggregate = 'jobs' | 'leases' | 'attempts' | 'effects' | 'schedules' | 'locks' | 'workers' | 'queues';

/** The same storage with one method of one aggregate replaced (`make` gets the original, bound): a database that hangs or fails in one place. */
export function overriding<A extends Aggregate, M extends keyof Storage[A]>(storage: Storage, aggregate: A, method: M, make: (original: Storage[A][M]) => Storage[A][M]): Storage {
  const inner = storage[aggregate];
  const replaced = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      const bound = typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return prop === method ? make(bound as Storage[A][M]) : bound;
    },
  });
  return new Proxy(storage, {
    get(target, prop, receiver) {
      if (prop === aggregate) return replaced;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * A describe() per storage kind, one after another (edge tests stall the whole process, which
 * would starve a neighbour's leases), each on a fresh database; `h()` is its harness once before() ran.
 */
export async function describeEachHarness(title: string, body: (h: () => Harness, kind: StorageKind) => void): Promise<void> {
  for (const kind of STORAGE_KINDS) {
    const suite = `${title} (${kind})`;
    const options = await kindOptions(kind, suite);
    describe(suite, options, () => {
      let harness: Harness | undefined;
      before(async () => {
        harness = await Harness.open(kind);
      });
      after(() => harness?.close());
      body(() => harness as Harness, kind);
    });
  }
}

/** `storage` whose first effect reserve (alone or batched) runs `then` once it landed, before it is answered. */
export function onFirstReserve(storage: Storage, then: (p: EffectParams) => Promise<void>): Storage {
  let first = true;
  const hook = async <T>(p: EffectParams, answer: T): Promise<T> => {
    if (first) {
      first = false;
      await then(p);
    }
    return answer;
  };
  const one = overriding(storage, 'effects', 'reserve', (reserve) => async (p) => hook(p, await reserve(p)));
  if (!storage.effects.reserveMany) return one;
  return overriding(one, 'effects', 'reserveMany', (many) => async (p) => hook(p.items[0]!, await many!(p)));
}

/** Run `fn` with a harness on `kind`, closed afterwards whatever happens. */
export async function withHarness(kind: StorageKind, fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await Harness.open(kind);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}
