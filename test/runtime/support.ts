/**
 * Shared helpers for the in-process runtime tests: storages of each kind (memory, SQLite in a
 * temp file), a pino logger that writes into an array so tests can assert on events, bounded
 * waits on conditions, and a small harness that stops every worker and closes every storage.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { JobStatus } from '../../src/core/status.js';
import type { JobRow, Storage } from '../../src/core/storage.js';
import { Client } from '../../src/runtime/client.js';
import type { AnyJobDefinition } from '../../src/runtime/job-definition.js';
import type { WorkerOptions } from '../../src/runtime/worker.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';

export type StorageKind = 'memory' | 'sqlite';
export const STORAGE_KINDS: readonly StorageKind[] = ['memory', 'sqlite'];

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

export async function openTestStorage(kind: StorageKind): Promise<{ storage: Storage; cleanup: () => Promise<void>; file?: string }> {
  if (kind === 'memory') {
    const storage = memoryStorage();
    await storage.migrate();
    return { storage, cleanup: () => storage.close() };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-rt-'));
  const file = path.join(dir, 'jobs.db');
  const storage = sqliteStorage({ path: file });
  await storage.migrate();
  return {
    storage,
    file,
    cleanup: async () => {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
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
  /** the SQLite file, for opening a second connection as another process would */
  file: string | undefined;
  #cleanup: () => Promise<void> = async () => {};

  static async open(kind: StorageKind, jobs?: readonly AnyJobDefinition[]): Promise<Harness> {
    const h = new Harness();
    const { storage, cleanup, file } = await openTestStorage(kind);
    h.storage = storage;
    h.file = file;
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

  job(id: string): Promise<JobRow> {
    return this.client.getJob(id);
  }

  /** Wait until the job has `status` (and, if given, `extra` holds); returns the row. */
  waitStatus(id: string, status: JobStatus | JobStatus[], timeoutMs = 5_000, extra?: (j: JobRow) => boolean): Promise<JobRow> {
    const want = Array.isArray(status) ? status : [status];
    return waitFor(
      async () => {
        const j = await this.storage.getJob(id);
        return j && want.includes(j.status) && (!extra || extra(j)) ? j : null;
      },
      timeoutMs,
      `job ${id} to be ${want.join('|')}`,
    );
  }

  /** Wait until a log line with `event` (for `jobId`, if given) appeared `n` times. */
  waitEvent(event: string, jobId?: string, timeoutMs = 5_000, n = 1): Promise<LogEntry> {
    return waitFor(() => this.log.events(event, jobId)[n - 1], timeoutMs, `log event ${event}${jobId ? ` for job ${jobId}` : ''} x${n}`);
  }

  async totalJobs(): Promise<number> {
    return (await this.storage.countJobs()).reduce((a, c) => a + c.count, 0);
  }

  async close(): Promise<void> {
    for (const w of this.workers) await w.stop({ deadlineMs: 500 });
    await this.#cleanup();
  }
}

/** The same storage with one method replaced (`make` gets the original, bound): a database that hangs or fails in one place. */
export function overriding<K extends keyof Storage>(storage: Storage, name: K, make: (original: Storage[K]) => Storage[K]): Storage {
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      const bound = typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return prop === name ? make(bound as Storage[K]) : bound;
    },
  });
}
