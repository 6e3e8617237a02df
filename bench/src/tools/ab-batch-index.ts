/**
 * What the batch members' index (jobs_batch_idx on PostgreSQL and SQLite, partial; the key
 * jobs_batch on MySQL, on every row) costs jobs that are in no batch: two storages on one
 * database, alike but for that index (A has it dropped), take turns (order alternating)
 * enqueueing a block of jobs in runs of 100 and draining it; prints each round's times and the
 * median of B ÷ A.
 *
 *   node --import tsx src/tools/ab-batch-index.ts sqlite|postgres|mysql [rounds] [jobs]
 */
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';
import { runIndexAb } from './index-ab.ts';

const [db = 'sqlite', roundsArg = '10', jobsArg = '5000'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const n = Number(jobsArg);
process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-batch-index';

async function open(name: string, indexed: boolean): Promise<Storage> {
  let url: string;
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await c.end();
    url = `${PG_URL}?schema=${name}`;
  } else if (db === 'mysql') {
    const c = await mysql.createConnection(MYSQL_URL);
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    url = `${MYSQL_URL}/${name}`;
  } else {
    const { mkdirSync, rmSync } = await import('node:fs');
    mkdirSync(sqliteDir(), { recursive: true });
    for (const ext of ['', '-wal', '-shm']) rmSync(join(sqliteDir(), `${name}.db${ext}`), { force: true });
    url = `sqlite:${join(sqliteDir(), `${name}.db`)}`;
  }
  const s = await openStorage(url);
  await s.migrate();
  if (!indexed) {
    if (db === 'postgres') {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP INDEX ${name}.jobs_batch_idx`);
      await c.end();
    } else if (db === 'mysql') {
      const c = await mysql.createConnection(`${MYSQL_URL}/${name}`);
      await c.query('ALTER TABLE leasehold_jobs DROP INDEX leasehold_jobs_batch');
      await c.end();
    } else {
      const { default: Database } = await import('better-sqlite3');
      const c = new Database(join(sqliteDir(), `${name}.db`));
      c.exec('DROP INDEX leasehold_jobs_batch_idx');
      c.close();
    }
  }
  return s;
}

const job = (i: number): NewJob => ({ queue: 'default', type: `t${i % 8}`, payload: { i, note: 'hello world' }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const types = Array.from({ length: 8 }, (_, i) => `t${i}`);

await runIndexAb({
  a: await open('ab_nobatchidx', false),
  b: await open('ab_batchidx', true),
  rounds, n, job, types,
  legend: 'A without, B with the batch index',
  title: db,
  detail: ', no job in a batch',
});
