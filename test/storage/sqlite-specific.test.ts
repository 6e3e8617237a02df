/**
 * What only the SQLite adapter has to prove: WAL mode, several PROCESSES sharing one file
 * (migrating at once, claiming at once), the schema-too-new guard, busy → TransientStorageError,
 * table prefixes, no caller transactions, and attempt rows written when the attempt ends
 * (migration 3), next to rows a schema-2 claim opened.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { NotSupportedError, SchemaTooNewError, TransientStorageError } from '../../src/core/errors.js';
import type { NewJob } from '../../src/core/storage.js';
import { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { withPrefix } from '../../src/storage/sqlite/sqlite-migrations.js';
import { MIGRATIONS_SQL } from '../../src/storage/sqlite/sqlite-sql.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const CHILD = path.join(here, 'fixtures', 'sqlite-child.ts');

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-'));
  dirs.push(dir);
  return path.join(dir, 'jobs.db');
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

interface Child {
  ready: Promise<void>;
  go(): void;
  /** the child's last stdout line, parsed */
  result: Promise<unknown>;
}

/** Spawn the fixture; it prints "ready", waits for "go", then prints one JSON line. */
function child(args: string[]): Child {
  const p = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((r) => (onReady = r));
  p.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.startsWith('ready\n')) onReady();
  });
  p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const result = new Promise<unknown>((resolve, reject) => {
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child ${args.join(' ')} exited ${code}: ${err}`));
      const lines = out.trim().split('\n');
      resolve(JSON.parse(lines[lines.length - 1] ?? 'null'));
    });
  });
  return { ready, go: () => p.stdin.end('go\n'), result };
}

describe('sqlite adapter specifics', () => {
  it('puts the file in WAL mode', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 1234 });
    await s.migrate();
    const raw = new Database(file, { readonly: true });
    try {
      assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      raw.close();
    }
    assert.deepEqual(s.capabilities, { multiProcess: true, transactionalEnqueue: false, listenNotify: false });
    await s.close();
  });

  it('two processes migrating the same new file at once both succeed; each version is recorded once', async () => {
    const file = tempFile();
    const kids = [child(['migrate', file]), child(['migrate', file])];
    await Promise.all(kids.map((k) => k.ready));
    for (const k of kids) k.go();
    const results = (await Promise.all(kids.map((k) => k.result))) as { from: number; to: number; applied: { version: number }[] }[];
    for (const r of results) assert.equal(r.to, SQLITE_LATEST_VERSION);
    const appliedVersions = results.flatMap((r) => r.applied.map((a) => a.version)).sort((a, b) => a - b);
    assert.deepEqual(appliedVersions, Array.from({ length: SQLITE_LATEST_VERSION }, (_, i) => i + 1), 'each version applied by exactly one process');
    const raw = new Database(file, { readonly: true });
    try {
      const rows = raw.prepare('SELECT version, count(*) AS n FROM leasehold_migrations GROUP BY version ORDER BY version').all() as { version: number; n: number }[];
      assert.deepEqual(rows.map((r) => r.version), Array.from({ length: SQLITE_LATEST_VERSION }, (_, i) => i + 1));
      assert.ok(rows.every((r) => r.n === 1));
    } finally {
      raw.close();
    }
  });

  it('a ledger newer than this code throws SchemaTooNewError and changes nothing', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    await s.close();
    const raw = new Database(file);
    raw.prepare('INSERT INTO leasehold_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(SQLITE_LATEST_VERSION + 1, 'from the future', Date.now());
    raw.close();
    const s2 = sqliteStorage({ path: file });
    await assert.rejects(s2.migrate(), (e: unknown) => e instanceof SchemaTooNewError && e.code === 'SCHEMA_TOO_NEW');
    assert.equal(await s2.schemaVersion(), SQLITE_LATEST_VERSION + 1);
    await s2.close();
  });

  it('three processes claiming 600 jobs from one file at once: every job exactly once', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    const type = 'race';
    const inserted: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await s.insertJobs(Array.from({ length: 100 }, (_, k) => job(type, { payload: { i, k }, priority: k % 3 })));
      inserted.push(...res.map((r) => r.job.id));
    }
    const kids = ['a', 'b', 'c'].map((w) => child(['claim', file, w, type, '7']));
    await Promise.all(kids.map((k) => k.ready));
    for (const k of kids) k.go();
    const results = (await Promise.all(kids.map((k) => k.result))) as { workerId: string; ids: string[] }[];
    const all = results.flatMap((r) => r.ids);
    assert.equal(new Set(all).size, all.length, 'no job claimed twice');
    assert.deepEqual([...all].sort(), [...inserted].sort(), 'every job claimed');
    // each claim opened exactly one attempt (read from the job row), under the worker that got the job
    const owner = new Map(results.flatMap((r) => r.ids.map((id) => [id, r.workerId] as const)));
    for (const id of inserted.slice(0, 20)) {
      const attempts = await s.listAttempts(id);
      assert.equal(attempts.length, 1);
      assert.equal(attempts[0]?.workerId, owner.get(id));
    }
    await s.close();
  });

  it('a write waits while another connection holds the write lock, and lands once it is released', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 5_000 });
    await s.migrate();
    // another thread takes the write lock and keeps it for 150 ms (this thread's waits are synchronous)
    const holder = new Worker(
      `const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
       const { parentPort, workerData } = require('node:worker_threads');
       const db = new Database(workerData);
       db.exec('BEGIN IMMEDIATE');
       parentPort.postMessage('locked');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
       db.exec('ROLLBACK');
       db.close();`,
      { eval: true, workerData: file },
    );
    await once(holder, 'message');
    const t0 = Date.now();
    assert.equal((await s.insertJobs([job('waits')])).length, 1);
    const waited = Date.now() - t0;
    assert.ok(waited >= 100, `waited for the lock (${waited} ms)`);
    assert.ok(waited < 2_000, `and took it soon after its release (${waited} ms)`);
    await once(holder, 'exit');
    await s.close();
  });

  it('SQLITE_BUSY past the busy timeout surfaces as TransientStorageError with the cause', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 50 });
    await s.migrate();
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      await assert.rejects(s.insertJobs([job('busy')]), (e: unknown) => {
        assert.ok(e instanceof TransientStorageError);
        assert.match(String((e.cause as { code?: string }).code), /^SQLITE_BUSY/);
        return true;
      });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    assert.equal((await s.insertJobs([job('busy')])).length, 1, 'works once the lock is free');
    await s.close();
  });

  it("rejects the caller's transaction handle with NotSupportedError", async () => {
    const s = sqliteStorage({ path: tempFile() });
    await s.migrate();
    await assert.rejects(s.insertJobs([job('tx')], { tx: {} }), NotSupportedError);
    assert.equal((await s.countJobs()).length, 0, 'nothing written');
    await s.close();
  });

  it('table prefixes keep two installations apart in one file; a bad prefix is refused', async () => {
    const file = tempFile();
    const a = sqliteStorage({ path: file, tablePrefix: 'app_a_' });
    const b = sqliteStorage({ path: file, tablePrefix: 'app_b_' });
    await a.migrate();
    await b.migrate();
    await a.insertJobs([job('x')]);
    assert.equal((await a.listJobs({ limit: 10 })).length, 1);
    assert.equal((await b.listJobs({ limit: 10 })).length, 0);
    await a.close();
    await b.close();
    assert.throws(() => sqliteStorage({ path: file, tablePrefix: 'x; DROP TABLE' }), TypeError);
  });

  it('uses the injected clock as the database clock', async () => {
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: tempFile(), clock: () => t });
    await s.migrate();
    assert.equal((await s.now()).getTime(), t);
    const [r] = await s.insertJobs([job('clock', { runAfterMs: 1000 })]);
    assert.equal(r?.job.runAt.getTime(), t + 1000);
    assert.equal((await s.claimJobs({ workerId: 'w', types: ['clock'], queues: null, limit: 1, leaseMs: 100 })).length, 0, 'not due yet');
    t += 1000;
    const [c] = await s.claimJobs({ workerId: 'w', types: ['clock'], queues: null, limit: 1, leaseMs: 100 });
    assert.equal(c?.lockedUntil.getTime(), t + 100);
    await s.close();
  });

  /** What a schema-2 claim did besides leasing: open the attempt row from the job row. */
  function openAsSchema2(file: string, prefix: string, id: string): void {
    const raw = new Database(file);
    try {
      raw.prepare(`INSERT INTO ${prefix}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome)
        SELECT id, attempts, locked_by, lease_token, started_at, 'running' FROM ${prefix}jobs WHERE id = ?`).run(Number(id));
    } finally {
      raw.close();
    }
  }
  function attemptRows(file: string, prefix: string, id: string): number {
    const raw = new Database(file, { readonly: true });
    try {
      return (raw.prepare(`SELECT count(*) AS n FROM ${prefix}job_attempts WHERE job_id = ?`).get(Number(id)) as { n: number }).n;
    } finally {
      raw.close();
    }
  }

  it('a claim writes no attempt row, listAttempts reads it from the job row; the finish writes one closed row', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.insertJobs([job('att')]);
    const [c] = await s.claimJobs({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 0, 'the claim wrote no attempt row');
    assert.deepEqual(await s.listAttempts(c!.id), [{
      id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
      finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
    }]);
    t += 1234;
    const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
    const res = await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }]);
    assert.deepEqual(res, [{ id: c!.id, applied: true }]);
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 1, 'the finish wrote one row');
    const [a, ...more] = await s.listAttempts(c!.id);
    assert.deepEqual(more, []);
    assert.match(a!.id, /^\d+$/);
    assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.finishedAt, a!.durationMs, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
      [1, 'w-att', c!.leaseToken, c!.startedAt, new Date(t), 1234, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
    // a lost lease writes nothing
    assert.deepEqual(await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: c!.id, applied: false }]);
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 1);
    await s.close();
  });

  it('an attempt row a schema-2 claim opened is closed in place by the finish and by a cancel: one row, not two', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.insertJobs([job('old'), job('old')]);
    const [f, k] = await s.claimJobs({ workerId: 'w-old', types: ['old'], queues: null, limit: 2, leaseMs: 30_000 });
    for (const c of [f!, k!]) openAsSchema2(file, 'leasehold_', c.id);
    const [opened, ...synthesized] = await s.listAttempts(f!.id);
    assert.deepEqual([opened!.outcome, synthesized], ['running', []], 'the open row, not also one from the job row');
    assert.match(opened!.id, /^\d+$/);
    t += 50;
    assert.deepEqual(await s.finishJobs([{ id: f!.id, leaseToken: f!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: f!.id, applied: true }]);
    const [closed, ...more] = await s.listAttempts(f!.id);
    assert.deepEqual(more, []);
    assert.deepEqual([closed!.id, closed!.outcome, closed!.startedAt, closed!.durationMs], [opened!.id, 'succeeded', f!.startedAt, 50]);
    t += 25;
    assert.equal((await s.cancelJob(k!.id)).applied, true);
    assert.deepEqual((await s.listAttempts(k!.id)).map((a) => [a.outcome, a.errorCode, a.errorMessage, a.durationMs]), [['cancelled', 'CANCELLED', 'cancelled by an operator', 75]]);
    assert.deepEqual([attemptRows(file, 'leasehold_', f!.id), attemptRows(file, 'leasehold_', k!.id)], [1, 1]);
    await s.close();
  });

  it('migrates a schema-2 file holding jobs and open attempt rows to 3; the open rows close in place, new claims write at the end', async () => {
    const file = tempFile();
    const p = 'm2_';
    // schema 2 as the migrations of that version left it
    const raw = new Database(file);
    raw.exec(withPrefix(MIGRATIONS_SQL.createLedger, p));
    for (const m of SQLITE_MIGRATIONS.filter((x) => x.version <= 2)) {
      raw.exec(withPrefix(m.sql, p));
      raw.prepare(withPrefix(MIGRATIONS_SQL.record, p)).run({ version: m.version, name: m.name, now: Date.now() });
    }
    raw.close();
    const s = sqliteStorage({ path: file, tablePrefix: p });
    assert.equal(await s.schemaVersion(), 2);
    // what schema-2 workers leave behind: a running job with its open attempt row, a queued one
    await s.insertJobs([job('m2'), job('m2')]);
    const [old] = await s.claimJobs({ workerId: 'w2', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    openAsSchema2(file, p, old!.id);
    const leaseIndex = (): unknown => {
      const r = new Database(file, { readonly: true });
      try {
        return r.prepare(`SELECT "unique" AS u FROM pragma_index_list('${p}job_attempts') WHERE name = '${p}job_attempts_job_idx'`).get();
      } finally {
        r.close();
      }
    };
    assert.deepEqual(leaseIndex(), { u: 0 });
    const res = await s.migrate();
    assert.deepEqual([res.from, res.to, res.applied.map((a) => a.version)], [2, 3, [3]]);
    assert.deepEqual(leaseIndex(), { u: 1 }, '(job_id, lease_token) is unique');
    assert.equal(attemptRows(file, p, old!.id), 1, 'the open row survived the migration');
    assert.deepEqual((await s.listAttempts(old!.id)).map((a) => [a.workerId, a.outcome]), [['w2', 'running']]);
    await s.finishJobs([{ id: old!.id, leaseToken: old!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    const [fresh] = await s.claimJobs({ workerId: 'w3', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(attemptRows(file, p, fresh!.id), 0);
    await s.finishJobs([{ id: fresh!.id, leaseToken: fresh!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    for (const [id, worker] of [[old!.id, 'w2'], [fresh!.id, 'w3']] as const) {
      assert.deepEqual((await s.listAttempts(id)).map((a) => [a.workerId, a.outcome]), [[worker, 'succeeded']], `job ${id}`);
      assert.equal(attemptRows(file, p, id), 1, `job ${id}: one row`);
    }
    assert.equal(await s.pruneJobs({ olderThanMs: -1, statuses: ['succeeded'], limit: 10 }), 2);
    assert.equal(attemptRows(file, p, old!.id) + attemptRows(file, p, fresh!.id), 0, 'attempts go with their jobs');
    await s.close();
  });
});
