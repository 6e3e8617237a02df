/**
 * The A/B loop the index tools share: two storages alike but for one index take turns (order
 * alternating) enqueueing a block of jobs in runs of 100 and draining it (claim 100, finish
 * 100); prints each round's times and the median of B ÷ A.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';

export type IndexDb = 'sqlite' | 'postgres' | 'mysql';

/**
 * A storage on a fresh database (PostgreSQL schema, MySQL database or SQLite file) named `name`,
 * migrated; then `ddl`'s statement for this database, if given (`{s}`: the PostgreSQL schema).
 */
export async function openFresh(db: IndexDb, name: string, ddl?: Record<IndexDb, string>): Promise<Storage> {
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
    mkdirSync(sqliteDir(), { recursive: true });
    for (const ext of ['', '-wal', '-shm']) rmSync(join(sqliteDir(), `${name}.db${ext}`), { force: true });
    url = `sqlite:${join(sqliteDir(), `${name}.db`)}`;
  }
  const s = await openStorage(url);
  await s.migrate();
  if (!ddl) return s;
  const stmt = ddl[db].replaceAll('{s}', name);
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(stmt);
    await c.end();
  } else if (db === 'mysql') {
    const c = await mysql.createConnection(`${MYSQL_URL}/${name}`);
    await c.query(stmt);
    await c.end();
  } else {
    const { default: Database } = await import('better-sqlite3');
    const c = new Database(join(sqliteDir(), `${name}.db`));
    c.exec(stmt);
    c.close();
  }
  return s;
}

export interface IndexAb {
  a: Storage;
  b: Storage;
  rounds: number;
  /** jobs per block */
  n: number;
  job: (i: number) => NewJob;
  /** the types the claims serve */
  types: string[];
  /** e.g. 'A without, B with the index' */
  legend: string;
  /** the last line's opening and closing words */
  title: string;
  detail: string;
}

async function round(s: Storage, ab: IndexAb): Promise<{ insert: number; drain: number }> {
  let t = performance.now();
  for (let i = 0; i < ab.n; i += 100) await s.jobs.insert({ jobs: Array.from({ length: 100 }, (_, k) => ab.job(i + k)) });
  const insert = performance.now() - t;
  t = performance.now();
  for (;;) {
    const got = await s.leases.claim({ workerId: 'w', types: ab.types, queues: null, limit: 100, leaseMs: 60_000 });
    if (got.length === 0) break;
    await s.leases.finish({ items: got.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
  }
  return { insert, drain: performance.now() - t };
}

export async function runIndexAb(ab: IndexAb): Promise<void> {
  const ratios = { insert: [] as number[], drain: [] as number[] };
  for (let r = 0; r < ab.rounds; r++) {
    const [first, second] = r % 2 === 0 ? [ab.a, ab.b] : [ab.b, ab.a];
    const x = await round(first, ab);
    const y = await round(second, ab);
    const [ra, rb] = r % 2 === 0 ? [x, y] : [y, x];
    ratios.insert.push(rb.insert / ra.insert);
    ratios.drain.push(rb.drain / ra.drain);
    console.log(`round ${r}: insert ${ra.insert.toFixed(0)} / ${rb.insert.toFixed(0)} ms, drain ${ra.drain.toFixed(0)} / ${rb.drain.toFixed(0)} ms (${ab.legend})`);
  }
  const median = (v: number[]): number => [...v].sort((p, q) => p - q)[Math.floor(v.length / 2)]!;
  console.log(`${ab.title}: median B/A insert ${median(ratios.insert).toFixed(3)}, drain ${median(ratios.drain).toFixed(3)} (${ab.rounds} rounds of ${ab.n} jobs${ab.detail})`);
  await ab.a.close();
  await ab.b.close();
}
