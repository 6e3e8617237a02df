/**
 * Shared helpers for the process-level tests: spawn the real `leasehold` CLI (from source,
 * through tsx), collect its JSON log lines and wait for events (support-cli.ts), open the same
 * database (SQLite, PostgreSQL or MySQL: support-db.ts) from the test to inspect jobs, attempts
 * and effects, and clean up every child, temp dir, schema and database. The tests import all of
 * it from here.
 *
 * Nothing here sleeps-and-hopes: every wait is for a log event or a database state, bounded
 * by a timeout that fails the test with what was seen so far.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { AttemptRow, JobStatus } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import { createClient } from '../../src/runtime/client.js';
import type { Client } from '../../src/runtime/client.js';
import { openStorage } from '../../src/storage/open.js';
import type { DbKind, ProvisionedDb } from './support-db.js';
import { provisionDb } from './support-db.js';
import { pause, waitUntil } from './support-checks.js';
import { CliProcess } from './support-cli.js';

export type { DbKind, DbTarget } from './support-db.js';
export { DB_KINDS, SERVER_KINDS, dbTargets } from './support-db.js';
export { assertNoOverlap, pause, tally, verifyDrain, waitForSucceeded, waitUntil } from './support-checks.js';
export type { ExitInfo, LogLine } from './support-cli.js';
export { BIN, CliProcess, ROOT, killAll } from './support-cli.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const HANDLERS = path.join(here, 'fixtures/handlers.ts');

/**
 * A temp dir (outbox, report file) and a fresh migrated database of one kind — a SQLite file, a
 * PostgreSQL schema or a MySQL database (support-db.ts) — with a storage and a client on it.
 */
export class Sandbox {
  readonly dir: string;
  /** SQLite: the database file ('' for the server kinds) */
  readonly dbPath: string;
  readonly outbox: string;
  readonly report: string;
  readonly storage: Storage;
  readonly client: Client;

  private constructor(
    readonly database: ProvisionedDb,
    dir: string,
    storage: Storage,
  ) {
    this.dir = dir;
    this.dbPath = database.kind === 'sqlite' ? database.name : '';
    this.outbox = path.join(this.dir, 'outbox.jsonl');
    this.report = path.join(this.dir, 'report.jsonl');
    this.storage = storage;
    this.client = createClient({ storage: this.storage });
  }

  /** SQLite by default; a server kind needs its URL (from `dbTargets`). */
  static async create(kind: DbKind = 'sqlite', server: string | null = null): Promise<Sandbox> {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-proc-'));
    let database: ProvisionedDb | undefined;
    try {
      database = await provisionDb(kind, server, dir);
      const storage = await openStorage(database.testUrl, { poolSize: 4 });
      const s = new Sandbox(database, dir, storage);
      await storage.migrate();
      return s;
    } catch (e) {
      await database?.drop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  get kind(): DbKind {
    return this.database.kind;
  }

  /** The URL workers get via --db. */
  get url(): string {
    return this.database.url;
  }

  /** Same as `url` (the name the SQLite-only scenarios use). */
  get db(): string {
    return this.database.url;
  }

  get env(): Record<string, string> {
    return { FIXTURE_OUTBOX: this.outbox, FIXTURE_REPORT: this.report };
  }

  /** `leasehold --db … <args>` with the fixture env. */
  cli(args: string[], env: Record<string, string> = {}): CliProcess {
    return new CliProcess(['--db', this.url, ...args], { ...this.env, ...env });
  }

  /** A worker on the fixture handlers with short leases; resolves once it logged worker.started. */
  async worker(extra: string[] = [], env: Record<string, string> = {}): Promise<CliProcess> {
    const p = this.cli(['worker', '--handlers', HANDLERS, '--lease', '1s', '--poll', '100ms', ...extra], env);
    await p.waitFor('worker.started', 20_000);
    return p;
  }

  outboxLines(): { key: string; jobId: string; attempt: number; pid: number }[] {
    return readJsonLines(this.outbox);
  }

  /** Job ids, one line per time a fixture handler threw on purpose (`failTimes`). */
  failureLines(): string[] {
    return existsSync(`${this.outbox}.failures`) ? readFileSync(`${this.outbox}.failures`, 'utf8').split('\n').filter(Boolean) : [];
  }

  reportLines(): Record<string, unknown>[] {
    return readJsonLines(this.report);
  }

  /** Resolves once the fixture reported that job `jobId`'s handler is parked (blocking its process). */
  parked(jobId: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return waitUntil(`job ${jobId} is parked`, () => this.reportLines().find((r) => r.phase === 'parked' && r.jobId === jobId), timeoutMs, 20);
  }

  /** Jobs by status, from the database. */
  async statusCounts(): Promise<Partial<Record<JobStatus, number>>> {
    const out: Partial<Record<JobStatus, number>> = {};
    for (const c of await this.storage.queues.counts()) out[c.status] = (out[c.status] ?? 0) + c.count;
    return out;
  }

  /** Every attempt row, grouped by job id (one query on the server kinds). */
  async attemptsByJob(): Promise<Map<string, AttemptRow[]>> {
    const rows: AttemptRow[] = [];
    if (this.database.allAttempts) rows.push(...(await this.database.allAttempts()));
    else for (const job of await this.storage.jobs.list({ limit: 1_000_000 })) rows.push(...(await this.storage.attempts.list({ jobId: job.id })));
    const out = new Map<string, AttemptRow[]>();
    for (const a of rows) out.set(a.jobId, [...(out.get(a.jobId) ?? []), a]);
    return out;
  }

  /** Kill every server connection of the workers; resolves to how many (server kinds only). */
  killConnections(): Promise<number> {
    return this.database.killConnections();
  }

  /**
   * Is SQLite's write lock free right now? False while another process holds it (e.g. one we
   * SIGSTOPped in the middle of a transaction).
   */
  writeLockFree(): boolean {
    if (this.kind !== 'sqlite') throw new Error('writeLockFree: SQLite only');
    return sqliteWriteLockFree(this.dbPath, 250);
  }

  async close(): Promise<void> {
    try {
      await this.storage.close();
    } finally {
      await this.database.drop();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/**
 * SIGSTOP `p`. On SQLite, at a moment it does not hold the write lock (a process frozen inside a
 * transaction would block every other process on the file: SQLite's limit, not the one
 * tested); the server kinds lock rows, not the database, so any moment will do.
 */
/** Whether SQLite's write lock on `file` can be taken within `timeoutMs` (taken and given back at once). */
export function sqliteWriteLockFree(file: string, timeoutMs: number): boolean {
  const db = new Database(file, { timeout: timeoutMs });
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return true;
  } catch {
    return false;
  } finally {
    db.close();
  }
}

export async function freeze(p: CliProcess, sandbox: Sandbox): Promise<void> {
  if (sandbox.kind !== 'sqlite') {
    p.signal('SIGSTOP');
    return;
  }
  for (let i = 0; i < 20; i++) {
    p.signal('SIGSTOP');
    if (sandbox.writeLockFree()) return;
    p.signal('SIGCONT');
    await pause(20 + i * 10);
  }
  throw new Error(`could not freeze pid ${p.pid} outside a write transaction`);
}

function readJsonLines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}
