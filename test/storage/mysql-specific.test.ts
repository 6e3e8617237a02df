/**
 * MySQL/MariaDB specifics beyond the conformance suite: server version check, error
 * classification and retry, concurrent migrations, a non-UTC session time zone, enqueue in the
 * caller's transaction, a real deadlock, reconnecting after KILL CONNECTION, and attempt rows
 * written when the attempt ends (migration 3), next to rows a schema-2 claim opened.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { LeaseholdError, SchemaTooNewError, TransientStorageError } from '../../src/core/errors.js';
import type { NewJob } from '../../src/core/storage.js';
import { LATEST_MYSQL_VERSION, MYSQL_MIGRATIONS, MysqlStorage, checkServerVersion, classifyMysqlError, mysqlStorage, parseServerVersion } from '../../src/storage/mysql/index.js';
import { LEDGER_DDL, renderDdl } from '../../src/storage/mysql/mysql-migrations.js';
import { withRetry } from '../../src/storage/mysql/mysql-errors.js';
import { mysqlSql } from '../../src/storage/mysql/mysql-sql.js';
import { serverFor } from '../support/databases.js';

function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { a: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

describe('mysql: server version check', () => {
  it('parses MySQL, MariaDB and the old MariaDB 5.5.5- prefix', () => {
    assert.deepEqual(parseServerVersion('8.0.36-0ubuntu0.22.04.1'), { flavor: 'mysql', major: 8, minor: 0, patch: 36, supported: true, collation: 'utf8mb4_0900_bin' });
    assert.equal(parseServerVersion('10.11.6-MariaDB-1:10.11.6+maria~deb12').flavor, 'mariadb');
    assert.equal(parseServerVersion('10.11.6-MariaDB-1:10.11.6+maria~deb12').collation, 'utf8mb4_nopad_bin');
    const old = parseServerVersion('5.5.5-10.6.12-MariaDB-log');
    assert.deepEqual([old.flavor, old.major, old.minor, old.patch, old.supported], ['mariadb', 10, 6, 12, true]);
    assert.equal(parseServerVersion('8.0.5').collation, 'utf8mb4_bin');
    assert.equal(parseServerVersion('9.1.0').supported, true);
  });
  it('accepts MySQL 8.0.4+ and MariaDB 10.6+', () => {
    for (const v of ['8.0.4', '8.0.36', '8.4.0-commercial', '10.6.0-MariaDB', '10.11.19-MariaDB-0+deb12u1', '11.4.2-MariaDB']) {
      assert.doesNotThrow(() => checkServerVersion(v), v);
    }
  });
  it('refuses servers without SKIP LOCKED with UNSUPPORTED_SERVER', () => {
    for (const v of ['5.7.44-log', '8.0.0-dmr', '8.0.3-rc', '10.5.22-MariaDB', '10.4.3-MariaDB-log', '5.5.5-10.5.9-MariaDB']) {
      assert.throws(() => checkServerVersion(v), (e: unknown) => e instanceof LeaseholdError && e.code === 'UNSUPPORTED_SERVER' && /SKIP LOCKED/.test(e.message), v);
    }
    assert.throws(() => checkServerVersion('garbage'), (e: unknown) => e instanceof LeaseholdError && e.code === 'UNSUPPORTED_SERVER');
  });
});

describe('mysql: error classification and retry', () => {
  const err = (errno: number, code: string) => Object.assign(new Error(code), { errno, code });
  it('classifies deadlock and lock wait timeout as lock errors, dropped connections as connection', () => {
    assert.equal(classifyMysqlError(err(1213, 'ER_LOCK_DEADLOCK')), 'lock');
    assert.equal(classifyMysqlError(err(1205, 'ER_LOCK_WAIT_TIMEOUT')), 'lock');
    assert.equal(classifyMysqlError(err(1467, 'ER_AUTOINC_READ_FAILED')), 'lock', 'a deadlock on the auto-increment lock');
    assert.equal(classifyMysqlError(Object.assign(new Error('x'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true })), 'connection');
    assert.equal(classifyMysqlError(Object.assign(new Error('x'), { code: 'ECONNRESET' })), 'connection');
    assert.equal(classifyMysqlError(err(1927, 'ER_CONNECTION_KILLED')), 'connection');
    assert.equal(classifyMysqlError(err(1062, 'ER_DUP_ENTRY')), 'other');
    assert.equal(classifyMysqlError(err(1064, 'ER_PARSE_ERROR')), 'other');
    assert.equal(classifyMysqlError('nope'), 'other');
  });
  it('retries lock errors with jitter, then gives up with TransientStorageError', async () => {
    const sleeps: number[] = [];
    let calls = 0;
    const ok = await withRetry('t', async () => (++calls < 3 ? Promise.reject(err(1213, 'ER_LOCK_DEADLOCK')) : 'done'), false, { sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 });
    assert.equal(ok, 'done');
    assert.equal(calls, 3);
    assert.deepEqual(sleeps, [10, 20]);
    calls = 0;
    await assert.rejects(
      withRetry('t', async () => ++calls && Promise.reject(err(1205, 'ER_LOCK_WAIT_TIMEOUT')), false, { attempts: 4, sleep: async () => undefined }),
      (e: unknown) => e instanceof TransientStorageError && e.code === 'TRANSIENT_STORAGE',
    );
    assert.equal(calls, 4);
  });
  it('does not retry a dropped connection where the work may have committed; other errors pass through', async () => {
    let calls = 0;
    const lost = Object.assign(new Error('lost'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true });
    await assert.rejects(withRetry('t', async () => ++calls && Promise.reject(lost), false), TransientStorageError);
    assert.equal(calls, 1);
    const dup = err(1062, 'ER_DUP_ENTRY');
    await assert.rejects(withRetry('t', async () => Promise.reject(dup), true), (e) => e === dup);
  });
});

const url = await serverFor('mysql', 'mysql specific');

if (url !== null) {
  const dbUrl = (db: string): string => {
    const u = new URL(url);
    u.pathname = `/${db}`;
    return u.toString();
  };

  describe('mysql: against the server', () => {
    const db = `lh_t_${randomBytes(6).toString('hex')}`;
    let admin: mysql.Connection;
    const owned: MysqlStorage[] = [];
    const pools: mysql.Pool[] = [];
    const make = (opts: { pool?: mysql.Pool; tablePrefix?: string; poolSize?: number } = {}): MysqlStorage => {
      const s = mysqlStorage(opts.pool ? opts : { uri: dbUrl(db), ...opts });
      owned.push(s);
      return s;
    };

    before(async () => {
      admin = await mysql.createConnection(url);
      await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
    });
    after(async () => {
      for (const s of owned) await s.close();
      for (const p of pools) await p.end();
      await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
      await admin.end();
    });

    it('two concurrent migrate() calls both succeed and the ledger has each version once', async () => {
      const a = make({ tablePrefix: 'cm_' });
      const b = make({ tablePrefix: 'cm_' });
      const [ra, rb] = await Promise.all([a.migrate(), b.migrate()]);
      assert.equal(ra.to, LATEST_MYSQL_VERSION);
      assert.equal(rb.to, LATEST_MYSQL_VERSION);
      assert.equal(ra.applied.length + rb.applied.length, LATEST_MYSQL_VERSION, 'each migration applied by exactly one of them');
      const [rows] = await admin.query(`SELECT version, COUNT(*) AS n FROM \`${db}\`.cm_migrations GROUP BY version ORDER BY version`);
      assert.deepEqual((rows as { version: number; n: number }[]).map((r) => [r.version, Number(r.n)]), Array.from({ length: LATEST_MYSQL_VERSION }, (_, i) => [i + 1, 1]));
      assert.equal(await a.schemaVersion(), LATEST_MYSQL_VERSION);
      const again = await a.migrate();
      assert.deepEqual(again, { from: LATEST_MYSQL_VERSION, to: LATEST_MYSQL_VERSION, applied: [] });
    });

    it('refuses a schema newer than it knows with SchemaTooNewError', async () => {
      const s = make({ tablePrefix: 'new_' });
      await s.migrate();
      await admin.query(`INSERT INTO \`${db}\`.new_migrations (version, name, applied_at) VALUES (999, 'future', UTC_TIMESTAMP(6))`);
      await assert.rejects(s.migrate(), (e: unknown) => e instanceof SchemaTooNewError && e.code === 'SCHEMA_TOO_NEW');
    });

    it('keeps UTC times under a non-UTC session time zone (+05:00) and a pool without timezone options', async () => {
      const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 2 });
      pools.push(pool);
      pool.on('connection', (conn) => void conn.query("SET time_zone = '+05:00'"));
      const [[tz]] = (await pool.query('SELECT @@session.time_zone AS tz, TIMESTAMPDIFF(HOUR, UTC_TIMESTAMP(), NOW()) AS h')) as unknown as [{ tz: string; h: number }[]];
      assert.deepEqual([tz?.tz, Number(tz?.h)], ['+05:00', 5], 'the session really runs at +05:00');
      const s = make({ pool, tablePrefix: 'tz_' });
      await s.migrate();
      const utcNow = async (): Promise<number> => {
        const [[r]] = (await admin.query({ sql: 'SELECT UTC_TIMESTAMP(6) AS t', dateStrings: true })) as unknown as [{ t: string }[]];
        return Date.parse(`${r!.t.replace(' ', 'T').slice(0, 23)}Z`);
      };
      const t0 = await utcNow();
      const dbNow = (await s.now()).getTime();
      const explicit = new Date(Date.UTC(2031, 0, 2, 3, 4, 5, 678));
      const [delayed, fixed, due] = await s.insertJobs([job('tz-delayed', { runAfterMs: 60_000 }), job('tz-fixed', { runAt: explicit }), job('tz-due')]);
      const claimed = await s.claimJobs({ workerId: 'w', types: ['tz-due'], queues: null, limit: 1, leaseMs: 30_000 });
      const t1 = await utcNow();
      assert.ok(dbNow >= t0 - 1 && dbNow <= t1 + 1, 'now() is UTC');
      const rd = delayed!.job.runAt.getTime();
      assert.ok(rd >= t0 + 60_000 - 1 && rd <= t1 + 60_000 + 1, `run_at ${delayed!.job.runAt.toISOString()} is UTC now + 60 s`);
      assert.equal(fixed!.job.runAt.toISOString(), explicit.toISOString(), 'an explicit runAt round-trips exactly');
      assert.ok(due!.job.createdAt.getTime() >= t0 - 1 && due!.job.createdAt.getTime() <= t1 + 1, 'created_at is UTC');
      const c = claimed[0]!;
      const lu = c.lockedUntil.getTime();
      assert.ok(lu >= t0 + 30_000 - 1 && lu <= t1 + 30_000 + 1, `locked_until ${c.lockedUntil.toISOString()} is UTC now + 30 s`);
      const [[stored]] = (await admin.query({ sql: `SELECT run_at FROM \`${db}\`.tz_jobs WHERE id = ?`, values: [fixed!.job.id], dateStrings: true })) as unknown as [{ run_at: string }[]];
      assert.equal(stored!.run_at, '2031-01-02 03:04:05.678000', 'stored as UTC at microsecond precision');
    });

    it('enqueues in the caller\'s transaction: rollback leaves no job, commit keeps it', async () => {
      const s = make({ tablePrefix: 'tx_' });
      await s.migrate();
      const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 2 });
      pools.push(pool);
      const conn = await pool.getConnection();
      try {
        await conn.beginTransaction();
        const [rolled] = await s.insertJobs([job('tx-a')], { tx: conn });
        await conn.rollback();
        assert.equal(await s.getJob(rolled!.job.id), null, 'rolled back: no job');
        assert.equal((await s.claimJobs({ workerId: 'w', types: ['tx-a'], queues: null, limit: 5, leaseMs: 1000 })).length, 0);

        await conn.beginTransaction();
        const [kept] = await s.insertJobs([job('tx-b', { idempotencyKey: 'k1' })], { tx: conn });
        assert.equal(await s.getJob(kept!.job.id), null, 'not visible before commit');
        await conn.commit();
        assert.equal((await s.getJob(kept!.job.id))?.status, 'queued', 'committed: job exists');

        const [claimed] = await s.claimJobs({ workerId: 'w', types: ['tx-b'], queues: null, limit: 1, leaseMs: 30_000 });
        await conn.beginTransaction();
        const [fin] = await s.finishJobs([{ id: claimed!.id, leaseToken: claimed!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }], { tx: conn });
        assert.deepEqual(fin, { id: claimed!.id, applied: true });
        await conn.rollback();
        assert.equal((await s.getJob(claimed!.id))?.status, 'running', 'finish rolled back with the caller');
      } finally {
        conn.release();
      }
    });

    it('a real deadlock surfaces as errno 1213 and classifies as a lock error', async () => {
      await admin.query(`CREATE TABLE \`${db}\`.dl (id INT PRIMARY KEY, v INT) ENGINE=InnoDB`);
      await admin.query(`INSERT INTO \`${db}\`.dl VALUES (1, 0), (2, 0)`);
      const a = await mysql.createConnection(dbUrl(db));
      const b = await mysql.createConnection(dbUrl(db));
      try {
        await a.beginTransaction();
        await b.beginTransaction();
        await a.query('UPDATE dl SET v = 1 WHERE id = 1');
        await b.query('UPDATE dl SET v = 1 WHERE id = 2');
        const results = await Promise.allSettled([a.query('UPDATE dl SET v = 2 WHERE id = 2'), b.query('UPDATE dl SET v = 2 WHERE id = 1')]);
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        assert.equal(failed.length, 1);
        assert.equal((failed[0]!.reason as { errno: number }).errno, 1213);
        assert.equal(classifyMysqlError(failed[0]!.reason), 'lock');
      } finally {
        await a.rollback().catch(() => undefined);
        await b.rollback().catch(() => undefined);
        await a.end();
        await b.end();
      }
    });

    /** Rows of a table, by the admin connection. */
    const rowsOf = async (sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> =>
      (await admin.query({ sql: sql.replaceAll('{db}', `\`${db}\``), values }))[0] as Record<string, unknown>[];
    /** What a schema-2 claim did besides leasing: open the attempt row from the job row. */
    const openAsSchema2 = (prefix: string, id: string) =>
      rowsOf(`INSERT INTO {db}.${prefix}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome)
        SELECT id, attempts, locked_by, lease_token, started_at, 'running' FROM {db}.${prefix}jobs WHERE id = ?`, [id]);
    const attemptRows = async (prefix: string, id: string): Promise<number> =>
      Number((await rowsOf(`SELECT COUNT(*) AS n FROM {db}.${prefix}job_attempts WHERE job_id = ?`, [id]))[0]!.n);

    it('a claim writes no attempt row, listAttempts reads it from the job row; the finish writes one closed row', async () => {
      const s = make({ tablePrefix: 'att_' });
      await s.migrate();
      await s.insertJobs([job('att')]);
      const [c] = await s.claimJobs({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
      assert.equal(await attemptRows('att_', c!.id), 0, 'the claim wrote no attempt row');
      assert.deepEqual(await s.listAttempts(c!.id), [{
        id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
        finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
      }]);
      const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
      await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }]);
      assert.equal(await attemptRows('att_', c!.id), 1, 'the finish wrote one row');
      const [a, ...more] = await s.listAttempts(c!.id);
      assert.deepEqual(more, []);
      assert.match(a!.id, /^\d+$/);
      assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
        [1, 'w-att', c!.leaseToken, c!.startedAt, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
      assert.equal(a!.durationMs, a!.finishedAt!.getTime() - a!.startedAt.getTime());
    });

    it('an attempt row a schema-2 claim opened is closed in place by the finish and by a cancel: one row, not two', async () => {
      const s = make({ tablePrefix: 'old_' });
      await s.migrate();
      await s.insertJobs([job('old'), job('old')]);
      const [f, k] = await s.claimJobs({ workerId: 'w-old', types: ['old'], queues: null, limit: 2, leaseMs: 30_000 });
      for (const c of [f!, k!]) await openAsSchema2('old_', c.id);
      const [opened, ...synthesized] = await s.listAttempts(f!.id);
      assert.deepEqual([opened!.outcome, synthesized], ['running', []], 'the open row, not also one from the job row');
      assert.match(opened!.id, /^\d+$/);
      assert.deepEqual(await s.finishJobs([{ id: f!.id, leaseToken: f!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: f!.id, applied: true }]);
      const [closed, ...more] = await s.listAttempts(f!.id);
      assert.deepEqual(more, []);
      assert.deepEqual([closed!.id, closed!.outcome, closed!.startedAt], [opened!.id, 'succeeded', f!.startedAt]);
      assert.equal(closed!.durationMs, closed!.finishedAt!.getTime() - closed!.startedAt.getTime());
      assert.equal((await s.cancelJob(k!.id)).applied, true);
      assert.deepEqual((await s.listAttempts(k!.id)).map((a) => [a.outcome, a.errorCode]), [['cancelled', 'CANCELLED']]);
      assert.deepEqual([await attemptRows('old_', f!.id), await attemptRows('old_', k!.id)], [1, 1]);
    });

    it('migrates a schema-2 database holding jobs to 3 (unique lease key, prune by finished_at), and again after a crash before its ledger row', async (t) => {
      const p = 'm2_';
      const [[v]] = (await admin.query('SELECT VERSION() AS v')) as unknown as [{ v: string }[]];
      const { collation } = checkServerVersion(v!.v);
      const c = await mysql.createConnection(dbUrl(db));
      t.after(() => c.end());
      // schema 2 as the migrations of that version left it
      await c.query(renderDdl(LEDGER_DDL, p, collation));
      for (const m of MYSQL_MIGRATIONS.filter((x) => x.version <= 2)) {
        for (const stmt of m.sql) await c.query(renderDdl(stmt, p, collation));
        await c.query(`INSERT INTO ${p}migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))`, [m.version, m.name]);
      }
      const s = make({ tablePrefix: p });
      assert.equal(await s.schemaVersion(), 2);
      // what schema-2 workers leave behind: a running job with its open attempt row, a queued one
      await s.insertJobs([job('m2'), job('m2')]);
      const [old] = await s.claimJobs({ workerId: 'w2', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
      await openAsSchema2(p, old!.id);
      const keys = async (): Promise<string[]> => (await rowsOf(`SELECT CONCAT(TABLE_NAME, '.', INDEX_NAME, ' ', IF(NON_UNIQUE, '', 'unique '),
          GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX)) AS k FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = ? AND INDEX_NAME IN ('m2_jobs_prune', 'm2_job_attempts_lease') GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE`, [db])).map((r) => String(r.k)).sort();
      assert.deepEqual(await keys(), ['m2_job_attempts.m2_job_attempts_lease job_id,lease_token', 'm2_jobs.m2_jobs_prune status,finished_at']);
      const res = await s.migrate();
      assert.deepEqual([res.from, res.to, res.applied.map((a) => a.version)], [2, 3, [3]]);
      const migrated = ['m2_job_attempts.m2_job_attempts_lease unique job_id,lease_token', 'm2_jobs.m2_jobs_prune finished_at'];
      assert.deepEqual(await keys(), migrated);
      // a crash after the DDL, before the ledger row: the next migrate runs 3 again without error
      await rowsOf(`DELETE FROM {db}.${p}migrations WHERE version = 3`);
      assert.deepEqual((await s.migrate()).applied.map((a) => a.version), [3]);
      assert.deepEqual(await keys(), migrated);
      // the jobs carry on: the open row closes in place, a new claim writes its row at the end
      await s.finishJobs([{ id: old!.id, leaseToken: old!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
      const [fresh] = await s.claimJobs({ workerId: 'w3', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
      assert.equal(await attemptRows(p, fresh!.id), 0);
      await s.finishJobs([{ id: fresh!.id, leaseToken: fresh!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
      for (const [id, worker] of [[old!.id, 'w2'], [fresh!.id, 'w3']] as const) {
        assert.deepEqual((await s.listAttempts(id)).map((a) => [a.workerId, a.outcome]), [[worker, 'succeeded']], `job ${id}`);
      }
      const [[plan]] = (await c.query(`EXPLAIN ${mysqlSql(p).pruneCandidates}`, [['succeeded'], 0, 10])) as unknown as [Record<string, unknown>[]];
      assert.deepEqual([plan!.type, plan!.key, /filesort/.test(String(plan!.Extra))], ['range', 'm2_jobs_prune', false], 'the prune reads a range of finished_at in order');
      assert.equal(await s.pruneJobs({ olderThanMs: 0, statuses: ['succeeded'], limit: 10 }), 2);
    });

    it('reconnects after its connections are killed (KILL CONNECTION)', async () => {
      const s = make({ tablePrefix: 'kill_', poolSize: 2 });
      await s.migrate();
      await s.insertJobs([job('k')]);
      const [procs] = await admin.query('SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()', [db]);
      assert.ok((procs as unknown[]).length > 0, 'the storage had connections open to kill');
      for (const p of procs as { id: number }[]) await admin.query(`KILL CONNECTION ${Number(p.id)}`).catch(() => undefined);
      const [inserted] = await s.insertJobs([job('k')]);
      assert.equal((await s.getJob(inserted!.job.id))?.type, 'k');
      assert.equal((await s.claimJobs({ workerId: 'w', types: ['k'], queues: null, limit: 10, leaseMs: 30_000 })).length, 2);
    });
  });
}
