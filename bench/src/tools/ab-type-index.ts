/**
 * What an index on jobs (type, id) costs the hot paths: two storages on one database, alike but
 * for that index, take turns (order alternating) enqueueing a block of jobs in runs of 100 and
 * draining it (claim 100, finish 100); prints each round's times and the median of B ÷ A.
 *
 *   node --import tsx src/tools/ab-type-index.ts sqlite|postgres|mysql [rounds] [jobs]
 */
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';

const [db = 'sqlite', roundsArg = '10', jobsArg = '5000'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const n = Number(jobsArg);
process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-dashboard';

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
    const { rmSync } = await import('node:fs');
    for (const ext of ['', '-wal', '-shm']) rmSync(join(sqliteDir(), `${name}.db${ext}`), { force: true });
    url = `sqlite:${join(sqliteDir(), `${name}.db`)}`;
  }
  const s = await openStorage(url);
  await s.migrate();
  if (indexed) {
    if (db === 'postgres') {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`CREATE INDEX jobs_type_idx ON ${name}.jobs (type, id)`);
      await c.end();
    } else if (db === 'mysql') {
      const c = await mysql.createConnection(`${MYSQL_URL}/${name}`);
      await c.query('CREATE INDEX leasehold_jobs_type ON leasehold_jobs (type, id)');
      await c.end();
    } else {
      const { default: Database } = await import('better-sqlite3');
      const c = new Database(join(sqliteDir(), `${name}.db`));
      c.exec('CREATE INDEX leasehold_jobs_type_idx ON leasehold_jobs (type, id)');
      c.close();
    }
  }
  return s;
}

const job = (i: number): NewJob => ({ queue: 'default', type: `t${i % 8}`, payload: { i, note: 'hello world' }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const types = Array.from({ length: 8 }, (_, i) => `t${i}`);

async function round(s: Storage): Promise<{ insert: number; drain: number }> {
  let t = performance.now();
  for (let i = 0; i < n; i += 100) await s.jobs.insert({ jobs: Array.from({ length: 100 }, (_, k) => job(i + k)) });
  const insert = performance.now() - t;
  t = performance.now();
  for (;;) {
    const got = await s.leases.claim({ workerId: 'w', types, queues: null, limit: 100, leaseMs: 60_000 });
    if (got.length === 0) break;
    await s.leases.finish({ items: got.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
  }
  return { insert, drain: performance.now() - t };
}

const a = await open('ab_plain', false);
const b = await open('ab_typeidx', true);
const ratios = { insert: [] as number[], drain: [] as number[] };
for (let r = 0; r < rounds; r++) {
  const [first, second] = r % 2 === 0 ? [a, b] : [b, a];
  const x = await round(first);
  const y = await round(second);
  const [ra, rb] = r % 2 === 0 ? [x, y] : [y, x];
  ratios.insert.push(rb.insert / ra.insert);
  ratios.drain.push(rb.drain / ra.drain);
  console.log(`round ${r}: insert ${ra.insert.toFixed(0)} / ${rb.insert.toFixed(0)} ms, drain ${ra.drain.toFixed(0)} / ${rb.drain.toFixed(0)} ms (A without, B with the index)`);
}
const median = (v: number[]): number => [...v].sort((p, q) => p - q)[Math.floor(v.length / 2)]!;
console.log(`${db}: median B/A insert ${median(ratios.insert).toFixed(3)}, drain ${median(ratios.drain).toFixed(3)} (${rounds} rounds of ${n} jobs)`);
await a.close();
await b.close();
