/**
 * The finish alone, two builds side by side in one process (each on a database of its own, alike),
 * alternated round by round (the first of a pair alternates too), so the machine's drift hits both:
 *   node --import tsx src/tools/ab-finish.ts sqlite|postgres|mysql [batch=200] [rounds=60] dirA dirB
 * Each dir holds a copy of the library (`dist/index.js`). A round claims `batch` jobs from each
 * and times each one's finish of them. Prints each build's median µs per job and the median of
 * the per-round ratio B/A (the figure to read on a shared machine).
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';

type Lh = typeof import('../../../src/index.ts');
const [db = 'sqlite', batchArg = '200', roundsArg = '60', dirA, dirB] = process.argv.slice(2);
if (!dirA || !dirB) {
  console.error('usage: ab-finish.ts db batch rounds dirA dirB');
  process.exit(2);
}
const batch = Number(batchArg);
const rounds = Number(roundsArg);
const builds = [dirA, dirB].map((d) => import(join(resolve(d), 'dist', 'index.js')) as Promise<Lh>);

/** A fresh database of this name (PostgreSQL schema, MySQL database, SQLite file), opened with `lh`. */
async function fresh(lh: Lh, name: string) {
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await c.end();
    return lh.openStorage(`${PG_URL}?schema=${name}`);
  }
  if (db === 'mysql') {
    const c = await mysql.createConnection(MYSQL_URL);
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    return lh.openStorage(`${MYSQL_URL}/${name}`);
  }
  const file = join(sqliteDir(), `${name}.db`);
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
  return lh.openStorage(`sqlite:${file}`);
}

const job = { queue: 'default', type: 'noop', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 };
const stores = await Promise.all((await Promise.all(builds)).map((lh, k) => fresh(lh, `bench_ab_finish_${k}`)));
for (const s of stores) {
  await s.migrate();
  for (let i = 0; i < batch * rounds; i += 1000) await s.jobs.insert({ jobs: Array.from({ length: Math.min(1000, batch * rounds - i) }, () => job) });
}
const us: [number[], number[]] = [[], []];
for (let r = 0; r < rounds; r++) {
  for (const k of r % 2 ? [1, 0] : [0, 1]) {
    const s = stores[k]!;
    const jobs = await s.leases.claim({ workerId: 'w', types: ['noop'], queues: null, limit: batch, leaseMs: 30_000 });
    const t = performance.now();
    await s.leases.finish({ items: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
    us[k]!.push((1000 * (performance.now() - t)) / jobs.length);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ratio = med(us[0].map((a, i) => us[1][i]! / a));
console.log(`${db} finish µs/job, median of ${rounds} rounds of ${batch}: A ${med(us[0]).toFixed(1)}, B ${med(us[1]).toFixed(1)}; B/A per round, median ${ratio.toFixed(3)}`);
for (const s of stores) await s.close();
process.exit(0);
