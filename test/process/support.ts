/**
 * Shared helpers for the process-level tests: spawn the real `leasehold` CLI (from source,
 * through tsx), collect its JSON log lines and wait for events, open the same database (SQLite,
 * PostgreSQL or MySQL: support-db.ts) from the test to inspect jobs, attempts and effects, and
 * clean up every child, temp dir, schema and database.
 *
 * Nothing here sleeps-and-hopes: every wait is for a log event or a database state, bounded
 * by a timeout that fails the test with what was seen so far.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
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

export type { DbKind, DbTarget } from './support-db.js';
export { DB_KINDS, SERVER_KINDS, dbTargets } from './support-db.js';
export { assertNoOverlap, pause, tally, verifyDrain, waitForSucceeded, waitUntil } from './support-checks.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '../..');
export const BIN = path.join(ROOT, 'src/cli/bin.ts');
export const HANDLERS = path.join(here, 'fixtures/handlers.ts');

/** One pino line. */
export interface LogLine {
  level: number;
  time: number;
  pid: number;
  msg?: string;
  event?: string;
  workerId?: string;
  jobId?: string;
  [k: string]: unknown;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when the exit was observed */
  at: number;
}

type Match = string | ((l: LogLine) => boolean);

const live = new Set<CliProcess>();

/** A spawned `leasehold …` process with its parsed stdout log. */
export class CliProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  readonly spawnedAt = Date.now();
  readonly exited: Promise<ExitInfo>;
  exit: ExitInfo | null = null;
  stdout = '';
  stderr = '';
  #partial = '';
  #listeners = new Set<() => void>();

  constructor(readonly args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, LEASEHOLD_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(this);
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => this.#onStdout(chunk));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    // Exit time is taken at 'exit'; the process counts as exited at 'close', once its stdout
    // is fully read, so no log line can arrive after a wait saw the exit.
    let exitAt = 0;
    this.child.on('exit', () => {
      exitAt = Date.now();
    });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.exit = { code, signal, at: exitAt || Date.now() };
        live.delete(this);
        resolve(this.exit);
        this.#notify();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The worker id from the `worker.started` line (throws if not seen yet). */
  get workerId(): string {
    const l = this.lines.find((x) => x.event === 'worker.started');
    if (!l?.workerId) throw new Error(`pid ${this.pid}: no worker.started line yet`);
    return l.workerId;
  }

  events(match: Match): LogLine[] {
    const pred = toPred(match);
    return this.lines.filter(pred);
  }

  #onStdout(chunk: string): void {
    this.stdout += chunk;
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.trim()) continue;
      try {
        this.lines.push(JSON.parse(p) as LogLine);
      } catch {
        // a non-JSON line (plain CLI output): keep it in stdout only
      }
    }
    this.#notify();
  }

  #notify(): void {
    for (const l of [...this.#listeners]) l();
  }

  /** Resolve with the first log line matching (already seen or future); fail on timeout or exit. */
  waitFor(match: Match, timeoutMs = 15_000): Promise<LogLine> {
    const pred = toPred(match);
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.lines.find(pred);
        if (hit) return finish(() => resolve(hit));
        if (this.exit) return finish(() => reject(new Error(`pid ${this.pid} exited (${JSON.stringify(this.exit)}) before ${describe(match)}\n${this.tail()}`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${describe(match)} from pid ${this.pid}\n${this.tail()}`))), timeoutMs);
      const finish = (f: () => void) => {
        clearTimeout(timer);
        this.#listeners.delete(check);
        f();
      };
      this.#listeners.add(check);
      check();
    });
  }

  /** Wait for exit, bounded. */
  async waitExit(timeoutMs = 15_000): Promise<ExitInfo> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`pid ${this.pid} did not exit within ${timeoutMs} ms\n${this.tail()}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(sig);
  }

  /** The last lines of output, for failure messages. */
  tail(n = 15): string {
    const out = this.stdout.trim().split('\n').slice(-n).join('\n');
    return `--- stdout (last ${n} lines) of ${this.args.join(' ')}\n${out}\n--- stderr\n${this.stderr.trim().slice(-2_000)}`;
  }
}

function toPred(match: Match): (l: LogLine) => boolean {
  return typeof match === 'string' ? (l) => l.event === match : match;
}

function describe(match: Match): string {
  return typeof match === 'string' ? `event ${match}` : 'a matching log line';
}

/** SIGKILL every child still alive (a SIGSTOPped one too); for `after` hooks and finally blocks. */
export async function killAll(): Promise<void> {
  const procs = [...live];
  for (const p of procs) {
    p.child.kill('SIGKILL');
  }
  await Promise.all(procs.map((p) => p.exited));
}

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
    for (const c of await this.storage.countJobs()) out[c.status] = (out[c.status] ?? 0) + c.count;
    return out;
  }

  /** Every attempt row, grouped by job id (one query on the server kinds). */
  async attemptsByJob(): Promise<Map<string, AttemptRow[]>> {
    const rows: AttemptRow[] = [];
    if (this.database.allAttempts) rows.push(...(await this.database.allAttempts()));
    else for (const job of await this.storage.listJobs({ limit: 1_000_000 })) rows.push(...(await this.storage.listAttempts(job.id)));
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
    const db = new Database(this.dbPath, { timeout: 250 });
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
