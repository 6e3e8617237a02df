/**
 * A dashboard-sized database for `db`, filled in seconds with set-based SQL: `succeeded`
 * finished jobs spread over the last week (each with its attempt, every tenth with a failed one
 * before it), `dead` (three attempts each) and `cancelled` ones among them, and `due` queued or
 * failed jobs due now, newest ids last. Types are skewed (one rare type, `ledger.rebuild`, one
 * job in 20,000), a fifth of the jobs carry an idempotency key, every thousandth a schedule.
 * Used by dashboard-queries.ts; `node --import tsx src/tools/dashboard-seed.ts <db> [scale]`
 * fills and keeps it.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';
import { openStorage } from '../../../src/storage/open.ts';
import type { Storage } from '../../../src/core/storage.ts';

export interface SeedShape {
  succeeded: number;
  dead: number;
  cancelled: number;
  due: number;
}

export const MILLION: SeedShape = { succeeded: 900_000, dead: 5_000, cancelled: 1_000, due: 100_000 };

const WEEK_MS = 7 * 24 * 3600_000;
const SCHEMA = 'bench_dashboard';

export function dashboardUrl(db: string): string {
  if (db === 'postgres') return `${PG_URL}?schema=${SCHEMA}`;
  if (db === 'mysql') return `${MYSQL_URL}/${SCHEMA}`;
  return `sqlite:${join(sqliteDir(), 'dashboard.db')}`;
}

/**
 * The columns of job i (1-based) as SQL expressions over `i` (an integer), `fin` (its finish
 * time as ms before now, for finished jobs) in the dialect's own string concatenation.
 */
function jobExprs(cat: (...parts: string[]) => string, s: SeedShape) {
  const finished = s.succeeded + s.dead + s.cancelled;
  const deadEvery = Math.floor(finished / s.dead);
  const cancelEvery = Math.floor(finished / s.cancelled) + 1;
  const status = `CASE WHEN i > ${finished} THEN (CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'queued' END)
    WHEN i % ${deadEvery} = 0 THEN 'dead' WHEN i % ${cancelEvery} = 0 THEN 'cancelled' ELSE 'succeeded' END`;
  const type = `CASE WHEN i % 20000 = 7 THEN 'ledger.rebuild' WHEN i % 100 < 40 THEN 'email.send' WHEN i % 100 < 65 THEN 'webhook.deliver'
    WHEN i % 100 < 80 THEN 'report.build' WHEN i % 100 < 90 THEN 'image.resize' WHEN i % 100 < 97 THEN 'sync.crm' ELSE 'billing.charge' END`;
  const queue = `CASE WHEN i % 100 < 40 THEN 'email' WHEN i % 100 < 80 AND i % 100 >= 65 THEN 'reports' ELSE 'default' END`;
  const payload = cat(`'{"user":'`, `(i % 50000)`, `',"order":"ord-'`, `i`, `'","note":"hello world"}'`);
  const key = `CASE WHEN i % 5 = 0 THEN ${cat(`'order-'`, 'i')} END`;
  const lastError = `CASE WHEN i > ${finished} AND i % 10 = 0 THEN 'Error: timeout after 30000 ms'
    WHEN i <= ${finished} AND i % ${deadEvery} = 0 THEN ${cat(`'Error: upstream 503 from api.example.com (request '`, 'i', `')'`)}
    WHEN i <= ${finished} AND i % 10 = 3 THEN 'Error: timeout after 30000 ms' END`;
  // the job's run time and its wait before the last attempt, in ms
  const duration = `((i * 7919) % 997) * ((i % 7) + 1)`;
  return { finished, deadEvery, cancelEvery, status, type, queue, payload, key, lastError, duration };
}

/** Drop and recreate the database or schema, migrate it, fill it; returns a storage on it. */
export async function seedDashboard(db: string, s: SeedShape): Promise<Storage> {
  const url = dashboardUrl(db);
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await c.end();
  } else if (db === 'mysql') {
    const c = await mysql.createConnection(MYSQL_URL);
    await c.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await c.query(`CREATE DATABASE ${SCHEMA}`);
    await c.end();
  } else {
    const { rmSync } = await import('node:fs');
    for (const ext of ['', '-wal', '-shm']) rmSync(join(sqliteDir(), `dashboard.db${ext}`), { force: true });
  }
  const storage = await openStorage(url);
  await storage.migrate();
  await storage.close();
  if (db === 'postgres') await fillPostgres(s);
  else if (db === 'mysql') await fillMysql(s);
  else await fillSqlite(s);
  return openStorage(url);
}

async function fillPostgres(s: SeedShape): Promise<void> {
  const e = jobExprs((...p) => p.join(' || '), s);
  const total = e.finished + s.due;
  const t = `"${SCHEMA}"`;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  const at = (msAgo: string) => `now() - (${msAgo}) * interval '1 millisecond'`;
  // finished jobs end evenly over the last week in id order; due jobs became due in the last minutes
  const finAgo = `(${e.finished} - i) * ${Math.floor(WEEK_MS / e.finished)} + 1000`;
  await c.query(`INSERT INTO ${t}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
      started_at, finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at)
    SELECT i, ${e.queue}, ${e.type}, (${e.payload})::json, st, 0,
      CASE WHEN i > ${e.finished} THEN ${at(`${total} - i`)} ELSE ${at(`${finAgo} + ${e.duration} + 500`)} END,
      CASE st WHEN 'dead' THEN 3 WHEN 'succeeded' THEN (CASE WHEN i % 10 = 3 THEN 2 ELSE 1 END) ELSE 0 END, 3, ${e.key},
      CASE WHEN i <= ${e.finished} THEN ${at(`${finAgo} + ${e.duration}`)} END,
      CASE WHEN i <= ${e.finished} THEN ${at(finAgo)} END,
      CASE WHEN ${e.lastError} IS NOT NULL THEN 'HANDLER_ERROR' END, ${e.lastError}, 60000, 600000,
      ${at(`CASE WHEN i > ${e.finished} THEN ${total} - i ELSE ${finAgo} + ${e.duration} + 500 END`)}, now(),
      CASE WHEN i % 1000 = 11 THEN 'nightly-report' END, CASE WHEN i % 1000 = 11 THEN ${at(`${total} - i + 7200000`)} END
    FROM (SELECT i, ${e.status} AS st FROM generate_series(1::bigint, ${total}::bigint) AS i) g`);
  await c.query(`SELECT setval(pg_get_serial_sequence('${t}.jobs', 'id'), ${total})`);
  // attempts: the last one of every succeeded or dead job; a failed one before it for every tenth
  // succeeded job and two for every dead one
  await c.query(`INSERT INTO ${t}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome, error_code, error_message)
    SELECT j.id, n, 'w-' || (j.id % 8), 'tok-' || j.id || '-' || n,
      j.finished_at - (${e.duration.replaceAll('i', 'j.id')} + (k - n) * 60000) * interval '1 millisecond',
      j.finished_at - ((k - n) * 60000) * interval '1 millisecond', ${e.duration.replaceAll('i', 'j.id')}, (j.id * 31) % 3000,
      CASE WHEN n < k THEN 'failed' WHEN j.status = 'dead' THEN 'dead' ELSE 'succeeded' END,
      CASE WHEN n < k OR j.status = 'dead' THEN 'HANDLER_ERROR' END, CASE WHEN n < k OR j.status = 'dead' THEN j.last_error END
    FROM (SELECT id, status, finished_at, last_error, attempts AS k FROM ${t}.jobs WHERE status IN ('succeeded','dead')) j,
      generate_series(1, j.k) AS n`);
  await c.query(`VACUUM ANALYZE ${t}.jobs`);
  await c.query(`VACUUM ANALYZE ${t}.job_attempts`);
  await c.end();
}

async function fillSqlite(s: SeedShape): Promise<void> {
  const e = jobExprs((...p) => p.join(' || '), s);
  const total = e.finished + s.due;
  const { default: Database } = await import('better-sqlite3');
  const conn = new Database(join(sqliteDir(), 'dashboard.db'));
  const now = Date.now();
  const finAgo = `((${e.finished} - i) * ${Math.floor(WEEK_MS / e.finished)} + 1000)`;
  const t = 'leasehold_';
  conn.exec('BEGIN');
  conn.exec(`INSERT INTO ${t}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
      started_at, finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at)
    WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ${total})
    SELECT i, ${e.queue}, ${e.type}, ${e.payload}, st, 0,
      CASE WHEN i > ${e.finished} THEN ${now} - (${total} - i) ELSE ${now} - ${finAgo} - ${e.duration} - 500 END,
      CASE st WHEN 'dead' THEN 3 WHEN 'succeeded' THEN (CASE WHEN i % 10 = 3 THEN 2 ELSE 1 END) ELSE 0 END, 3, ${e.key},
      CASE WHEN i <= ${e.finished} THEN ${now} - ${finAgo} - ${e.duration} END,
      CASE WHEN i <= ${e.finished} THEN ${now} - ${finAgo} END,
      CASE WHEN ${e.lastError} IS NOT NULL THEN 'HANDLER_ERROR' END, ${e.lastError}, 60000, 600000,
      ${now} - CASE WHEN i > ${e.finished} THEN ${total} - i ELSE ${finAgo} + ${e.duration} + 500 END, ${now},
      CASE WHEN i % 1000 = 11 THEN 'nightly-report' END, CASE WHEN i % 1000 = 11 THEN ${now} - (${total} - i) - 7200000 END
    FROM (SELECT i, ${e.status} AS st FROM g)`);
  const d = e.duration.replaceAll('i', 'j.id');
  conn.exec(`INSERT INTO ${t}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome, error_code, error_message)
    WITH RECURSIVE n(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM n WHERE n < 3)
    SELECT j.id, n.n, 'w-' || (j.id % 8), 'tok-' || j.id || '-' || n.n,
      j.finished_at - ${d} - (j.attempts - n.n) * 60000, j.finished_at - (j.attempts - n.n) * 60000, ${d}, (j.id * 31) % 3000,
      CASE WHEN n.n < j.attempts THEN 'failed' WHEN j.status = 'dead' THEN 'dead' ELSE 'succeeded' END,
      CASE WHEN n.n < j.attempts OR j.status = 'dead' THEN 'HANDLER_ERROR' END,
      CASE WHEN n.n < j.attempts OR j.status = 'dead' THEN j.last_error END
    FROM ${t}jobs j JOIN n ON n.n <= j.attempts WHERE j.status IN ('succeeded','dead') ORDER BY j.finished_at, n.n`);
  conn.exec('COMMIT');
  conn.exec('ANALYZE');
  conn.close();
}

async function fillMysql(s: SeedShape): Promise<void> {
  const e = jobExprs((...p) => `CONCAT(${p.join(', ')})`, s);
  const total = e.finished + s.due;
  const c = await mysql.createConnection(`${MYSQL_URL}/${SCHEMA}`);
  const t = 'leasehold_';
  await c.query(`SET @now = UTC_TIMESTAMP(6)`);
  const at = (msAgo: string) => `TIMESTAMPADD(MICROSECOND, -1000 * (${msAgo}), @now)`;
  const finAgo = `((${e.finished} - i) * ${Math.floor(WEEK_MS / e.finished)} + 1000)`;
  const digits = `(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`;
  // 100,000 ids per statement from five digit tables
  for (let base = 0; base < total; base += 100_000) {
    const ids = `SELECT ${base} + a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d + 1 AS i FROM ${digits} a, ${digits} b, ${digits} c, ${digits} d, ${digits} e`;
    await c.query(`INSERT INTO ${t}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
        started_at, finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at)
      SELECT i, ${e.queue}, ${e.type}, ${e.payload}, st, 0,
        CASE WHEN i > ${e.finished} THEN ${at(`${total} - i`)} ELSE ${at(`${finAgo} + ${e.duration} + 500`)} END,
        CASE st WHEN 'dead' THEN 3 WHEN 'succeeded' THEN (CASE WHEN i % 10 = 3 THEN 2 ELSE 1 END) ELSE 0 END, 3, ${e.key},
        CASE WHEN i <= ${e.finished} THEN ${at(`${finAgo} + ${e.duration}`)} END,
        CASE WHEN i <= ${e.finished} THEN ${at(finAgo)} END,
        CASE WHEN ${e.lastError} IS NOT NULL THEN 'HANDLER_ERROR' END, ${e.lastError}, 60000, 600000,
        ${at(`CASE WHEN i > ${e.finished} THEN ${total} - i ELSE ${finAgo} + ${e.duration} + 500 END`)}, @now,
        CASE WHEN i % 1000 = 11 THEN 'nightly-report' END, CASE WHEN i % 1000 = 11 THEN ${at(`${total} - i + 7200000`)} END
      FROM (SELECT i, ${e.status} AS st FROM (${ids}) g WHERE i <= ${total}) x`);
  }
  // signed: the ids are BIGINT UNSIGNED, and the times subtract from them
  const d = e.duration.replaceAll('i', 'CAST(j.id AS SIGNED)');
  await c.query(`INSERT INTO ${t}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome, error_code, error_message)
    SELECT j.id, n.n, CONCAT('w-', j.id % 8), CONCAT('tok-', j.id, '-', n.n),
      TIMESTAMPADD(MICROSECOND, -1000 * (${d} + (j.attempts - n.n) * 60000), j.finished_at),
      TIMESTAMPADD(MICROSECOND, -1000 * ((j.attempts - n.n) * 60000), j.finished_at), ${d}, (j.id * 31) % 3000,
      CASE WHEN n.n < j.attempts THEN 'failed' WHEN j.status = 'dead' THEN 'dead' ELSE 'succeeded' END,
      CASE WHEN n.n < j.attempts OR j.status = 'dead' THEN 'HANDLER_ERROR' END,
      CASE WHEN n.n < j.attempts OR j.status = 'dead' THEN j.last_error END
    FROM ${t}jobs j JOIN (SELECT 1 n UNION ALL SELECT 2 UNION ALL SELECT 3) n ON n.n <= j.attempts
    WHERE j.status IN ('succeeded','dead') ORDER BY j.finished_at, n.n`);
  await c.query(`ANALYZE TABLE ${t}jobs, ${t}job_attempts`);
  await c.end();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [db = 'sqlite', scale = '1'] = process.argv.slice(2);
  const k = Number(scale);
  const shape: SeedShape = { succeeded: MILLION.succeeded * k, dead: MILLION.dead * k, cancelled: MILLION.cancelled * k, due: MILLION.due * k };
  const t0 = performance.now();
  process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-dashboard';
  const storage = await seedDashboard(db, shape);
  console.log(`${db}: ${dashboardUrl(db)} filled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await storage.close();
}

/** The dashboard tools' command line: the database, --scale (× a million jobs), --runs, --reuse, --only. */
export function dashboardArgs() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { scale: { type: 'string', default: '1' }, runs: { type: 'string', default: '20' }, reuse: { type: 'boolean', default: false }, only: { type: 'string' } },
  });
  process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-dashboard';
  return { values, db: positionals[0] ?? 'sqlite', k: Number(values.scale) };
}

