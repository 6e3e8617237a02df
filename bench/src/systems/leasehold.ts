/**
 * leasehold itself, imported from the parent checkout's build (dist/, what users run; the
 * root `npm run bench` builds it first). Not the TypeScript sources through tsx: tsx keeps
 * function names by wrapping every function expression, which cost leasehold ~5 % of a drain's
 * CPU that the peers, run from their compiled packages, do not pay.
 * Every guarantee stays on: fenced finishes, heartbeats, attempt history, the sweeper.
 * Logging is silenced (LEASEHOLD_LOG_LEVEL=silent), as it is for every peer.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
// BENCH_LEASEHOLD_SRC=/abs/path/to/dist/index.js (or src/index.ts) measures another copy (e.g. a prototype) instead
const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
const { Worker, createClient, defineJob, openStorage } = lh;
import type { Db, OnJob, Producer, SystemDef } from '../common.ts';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';

process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';

const PG_SCHEMA = 'bench_leasehold';
const MY_DB = 'bench_leasehold';
const sqliteFile = () => join(sqliteDir(), 'leasehold.db');

function url(db: Db, variant: Variant = 'default'): string {
  if (db === 'postgres') return `${PG_URL}?schema=${PG_SCHEMA}`;
  if (db === 'mysql') return `${MYSQL_URL}/${MY_DB}`;
  return `sqlite:${sqliteFile()}${variant === 'node-sqlite' ? '?driver=node:sqlite' : ''}`;
}

let onJobRef: OnJob = () => {};
// BENCH_HANDLER=once: each job first records one effect through ctx.once, the ledger's two
// writes (for tools/ab-drain.ts; the harness's table always runs no-op jobs)
const noop =
  process.env.BENCH_HANDLER === 'once'
    ? defineJob({ type: 'noop', maxAttempts: 5, handler: async (p: unknown, ctx) => void (await ctx.once(`e-${ctx.job.id}`, () => null), onJobRef(p)) })
    : defineJob({ type: 'noop', handler: (p: unknown) => onJobRef(p), maxAttempts: 5 });

async function pgExec(sql: string, params: unknown[] = []): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql, params);
  } finally {
    await c.end();
  }
}

async function myExec(sqls: string[], database?: string): Promise<void> {
  const c = await mysql.createConnection({ uri: database ? `${MYSQL_URL}/${database}` : MYSQL_URL, multipleStatements: false });
  try {
    for (const s of sqls) await c.query(s);
  } finally {
    await c.end();
  }
}

function removeSqlite(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
}

async function reset(db: Db): Promise<void> {
  if (db === 'postgres') await pgExec(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`);
  else if (db === 'mysql') await myExec([`DROP DATABASE IF EXISTS ${MY_DB}`, `CREATE DATABASE ${MY_DB}`]);
  else removeSqlite(sqliteFile());
  const storage = await openStorage(url(db));
  await storage.migrate();
  await storage.close();
}

async function cleanup(db: Db): Promise<void> {
  if (db === 'postgres') await pgExec(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`);
  else if (db === 'mysql') await myExec([`DROP DATABASE IF EXISTS ${MY_DB}`]);
  else removeSqlite(sqliteFile());
}

/**
 * Jobs not yet finished, counted over the indexes of unfinished rows only. The harness asks this
 * repeatedly at the end of every drain; `client.countJobs()` (the dashboard's per-status counts)
 * reads every row, finished ones included, which on the spike's 1,000,000 finished rows took
 * 0.3–0.5 s per call on SQLite and was timed as part of the drain.
 */
async function unfinishedCounter(db: Db): Promise<{ count: () => Promise<number>; close: () => Promise<void> }> {
  const due = `status IN ('queued','failed')`;
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    const t = `${PG_SCHEMA}.jobs`;
    const sql = `SELECT (SELECT count(*) FROM ${t} WHERE ${due}) + (SELECT count(*) FROM ${t} WHERE status = 'running') AS n`;
    return { count: async () => Number((await c.query(sql)).rows[0].n), close: () => c.end() };
  }
  if (db === 'mysql') {
    const c = await mysql.createConnection({ uri: `${MYSQL_URL}/${MY_DB}` });
    const sql = `SELECT count(*) AS n FROM leasehold_jobs WHERE status IN ('queued','failed','running')`;
    return { count: async () => Number(((await c.query(sql))[0] as { n: number }[])[0]?.n), close: () => c.end() };
  }
  const d = new Database(sqliteFile(), { readonly: true });
  const stmt = d.prepare(`SELECT (SELECT count(*) FROM leasehold_jobs WHERE ${due}) + (SELECT count(*) FROM leasehold_jobs WHERE status = 'running') AS n`);
  return { count: async () => Number((stmt.get() as { n: number }).n), close: async () => void d.close() };
}

async function producer(db: Db, variant: Variant): Promise<Producer> {
  const storage = await openStorage(url(db, variant));
  const client = createClient({ storage, jobs: [noop] });
  let counter: Awaited<ReturnType<typeof unfinishedCounter>> | undefined;
  return {
    enqueueOne: async (p) => void (await client.enqueue('noop', p)),
    enqueueBulk: async (ps) => void (await client.enqueueMany(ps.map((payload) => ({ type: 'noop', payload })))),
    remaining: async () => (counter ??= await unfinishedCounter(db)).count(),
    close: async () => {
      await counter?.close();
      await storage.close();
    },
  };
}

/**
 * Spike seed: `finished` succeeded rows (each with its closed attempt row) from yesterday, then
 * `due` queued rows whose run_at all fall within the last minute. Generated in the database
 * (generate_series / recursive CTE), then ANALYZEd as autovacuum would have by then.
 */
async function seedSpike(db: Db, finished: number, due: number): Promise<void> {
  if (db === 'postgres') {
    const s = PG_SCHEMA;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    try {
      if (finished > 0) {
        await c.query(`INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
            started_at, finished_at, created_at, updated_at)
          SELECT 'default', 'noop', '{"i":1}'::json, 'succeeded', 0, now() - interval '1 day', 1, 5, 300000, 3600000,
            now() - interval '1 day', now() - interval '1 day' + interval '5 ms', now() - interval '1 day', now() - interval '1 day'
          FROM generate_series(1, $1::int)`, [finished]);
        await c.query(`INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome)
          SELECT id, 1, 'seed', md5(id::text), started_at, finished_at, 5, 0, 'succeeded' FROM ${s}.jobs WHERE status = 'succeeded'`);
      }
      await c.query(`INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
        SELECT 'default', 'noop', '{"i":1}'::json, 'queued', 0, date_trunc('milliseconds', now()) - (g % 60000) * interval '1 ms', 0, 5, 300000, 3600000, now(), now()
        FROM generate_series(1, $1::int) g`, [due]);
      // as a table that grew over weeks would be: vacuumed, analyzed, its WAL checkpointed (else
      // autovacuum and the checkpoint after the 1M-row load would run during the drain)
      await c.query(`VACUUM ANALYZE ${s}.jobs`);
      await c.query(`VACUUM ANALYZE ${s}.job_attempts`);
      await c.query('CHECKPOINT');
    } finally {
      await c.end();
    }
  } else if (db === 'sqlite') {
    const d = new Database(sqliteFile());
    d.pragma('journal_mode = WAL');
    d.pragma('synchronous = NORMAL');
    const now = Date.now();
    const gen = 'WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?)';
    d.transaction(() => {
      if (finished > 0) {
        const y = now - 86_400_000;
        d.prepare(`${gen} INSERT INTO leasehold_jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
            started_at, finished_at, created_at, updated_at)
          SELECT 'default', 'noop', '{"i":1}', 'succeeded', 0, ${y}, 1, 5, 300000, 3600000, ${y}, ${y + 5}, ${y}, ${y} FROM g`).run(finished);
        d.prepare(`INSERT INTO leasehold_job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome)
          SELECT id, 1, 'seed', hex(randomblob(16)), started_at, finished_at, 5, 0, 'succeeded' FROM leasehold_jobs WHERE status = 'succeeded'`).run();
      }
      d.prepare(`${gen} INSERT INTO leasehold_jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
        SELECT 'default', 'noop', '{"i":1}', 'queued', 0, ${now} - (x % 60000), 0, 5, 300000, 3600000, ${now}, ${now} FROM g`).run(due);
    })();
    d.exec('ANALYZE');
    d.pragma('wal_checkpoint(TRUNCATE)');
    d.close();
  } else {
    const c = await mysql.createConnection({ uri: `${MYSQL_URL}/${MY_DB}` });
    // 1000 x 1000 from a recursive CTE; inside a derived table so MariaDB and MySQL both take it
    const gen = `(SELECT a.n * 1000 + b.n AS x FROM (WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 999) SELECT n FROM k) a
      CROSS JOIN (WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 999) SELECT n FROM k) b) g`;
    try {
      if (finished > 0) {
        await c.query(`INSERT INTO leasehold_jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
            started_at, finished_at, created_at, updated_at)
          SELECT 'default', 'noop', '{"i":1}', 'succeeded', 0, UTC_TIMESTAMP(6) - INTERVAL 1 DAY, 1, 5, 300000, 3600000,
            UTC_TIMESTAMP(6) - INTERVAL 1 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY
          FROM ${gen} WHERE g.x < ?`, [finished]);
        await c.query(`INSERT INTO leasehold_job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome)
          SELECT id, 1, 'seed', md5(id), started_at, finished_at, 5, 0, 'succeeded' FROM leasehold_jobs WHERE status = 'succeeded'`);
      }
      await c.query(`INSERT INTO leasehold_jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
        SELECT 'default', 'noop', '{"i":1}', 'queued', 0, UTC_TIMESTAMP(6) - INTERVAL (g.x % 60000) * 1000 MICROSECOND, 0, 5, 300000, 3600000, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
        FROM ${gen} WHERE g.x < ?`, [due]);
      await c.query('ANALYZE TABLE leasehold_jobs, leasehold_job_attempts');
    } finally {
      await c.end();
    }
  }
}

type Variant = 'default' | 'poll10' | 'node-sqlite';

/** For measurement tools only (guarantee-cost-pg.ts): called with each worker's storage before the worker starts. */
export const storageHooks: { onWorkerStorage?: (storage: unknown) => void } = {};

function def(db: Db, variant: Variant): SystemDef {
  const pollIntervalMs = variant === 'poll10' ? 10 : undefined;
  const suffix = variant === 'poll10' ? '-poll10' : variant === 'node-sqlite' ? '-node' : '';
  const pushed = { postgres: 'LISTEN/NOTIFY wake-ups', sqlite: 'wake-ups from a watch on the database files', mysql: 'wake-ups through a parked connection (KILL QUERY)' }[db];
  const wake = `${pushed} + ${variant === 'poll10' ? 'a poll every 10 ms' : '1 s backstop poll (default)'}`;
  return {
    id: `leasehold-${db}${suffix}`,
    db,
    label: variant === 'poll10' ? 'leasehold, poll 10 ms' : variant === 'node-sqlite' ? 'leasehold on node:sqlite' : 'leasehold',
    settings: `Worker({concurrency: c}) defaults: the automatic claim buffer (about 25 ms of work, up to 500 no-op jobs; a claim refills it once half empty), lease 30 s, heartbeats, sweeper, attempt rows, batched fenced finishes; ${wake}; openStorage(url) default pool 10; logger silent`,
    kind: 'leasehold',
    timeEnqueue: variant !== 'poll10',
    latency: true,
    latencyEveryRound: db === 'postgres' && variant === 'default',
    latencyOnly: variant === 'poll10',
    reset: () => reset(db),
    cleanup: () => cleanup(db),
    producer: () => producer(db, variant),
    async worker({ concurrency, onJob }) {
      onJobRef = onJob;
      const storage = await openStorage(url(db, variant));
      storageHooks.onWorkerStorage?.(storage);
      const bufferSize = process.env.BENCH_LEASEHOLD_BUFFER ? Number(process.env.BENCH_LEASEHOLD_BUFFER) : undefined;
      const w = new Worker({ storage, jobs: [noop], concurrency, ...(pollIntervalMs ? { pollIntervalMs } : {}), ...(bufferSize ? { bufferSize } : {}) });
      await w.start();
      return {
        async stop() {
          await w.stop({ deadlineMs: 5_000 });
          await storage.close();
        },
      };
    },
    seedSpike: (f, d) => seedSpike(db, f, d),
  };
}

export const leaseholdSystems: SystemDef[] = [
  def('postgres', 'default'),
  def('sqlite', 'default'),
  def('sqlite', 'poll10'),
  def('sqlite', 'node-sqlite'),
  def('mysql', 'default'),
  def('mysql', 'poll10'),
];
