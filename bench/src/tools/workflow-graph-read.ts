/**
 * What the dashboard's workflow page reads: workflows.graph({ limit: 500 }) on a 5,000-job fan-out
 * (a root and its children, asked from a child) and on a 2,000-job chain (asked from its middle),
 * beside 100,000 other jobs; prints the median and p95 of 30 reads after 3 warm-ups.
 *
 *   node --import tsx src/tools/workflow-graph-read.ts sqlite|postgres|mysql
 */
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { FlowJob, NewJob, Storage } from '../../../src/core/storage.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';

const [db = 'sqlite'] = process.argv.slice(2);
const NAME = 'graph_read';
process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-graph-read';

async function open(): Promise<Storage> {
  let url: string;
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${NAME} CASCADE`);
    await c.end();
    url = `${PG_URL}?schema=${NAME}`;
  } else if (db === 'mysql') {
    const c = await mysql.createConnection(MYSQL_URL);
    await c.query(`DROP DATABASE IF EXISTS ${NAME}`);
    await c.query(`CREATE DATABASE ${NAME}`);
    await c.end();
    url = `${MYSQL_URL}/${NAME}`;
  } else {
    const { mkdirSync, rmSync } = await import('node:fs');
    mkdirSync(sqliteDir(), { recursive: true });
    for (const ext of ['', '-wal', '-shm']) rmSync(join(sqliteDir(), `${NAME}.db${ext}`), { force: true });
    url = `sqlite:${join(sqliteDir(), `${NAME}.db`)}`;
  }
  const s = await openStorage(url);
  await s.migrate();
  return s;
}

const job = (type: string): NewJob => ({ queue: 'default', type, payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const s = await open();
for (let i = 0; i < 100_000; i += 1_000) await s.jobs.insert({ jobs: Array.from({ length: 1_000 }, () => job('other')) });
const fan = await s.workflows.insertFlow({ jobs: Array.from({ length: 5_000 }, (_, i): FlowJob => ({ ...job('fan'), parents: i === 0 ? [] : [0] })), onParentFailure: 'cancel' });
const chain = await s.workflows.insertFlow({ jobs: Array.from({ length: 2_000 }, (_, i): FlowJob => ({ ...job('chain'), parents: i === 0 ? [] : [i - 1] })), onParentFailure: 'cancel' });

async function time(what: string, jobId: string): Promise<void> {
  const ms: number[] = [];
  for (let i = 0; i < 33; i++) {
    const t = performance.now();
    const g = await s.workflows.graph({ jobId, limit: 500 });
    if (i >= 3) ms.push(performance.now() - t);
    if (g.jobs.length !== 500 || !g.capped) throw new Error(`${what}: ${g.jobs.length} jobs, capped ${g.capped}`);
  }
  ms.sort((a, b) => a - b);
  console.log(`${db} ${what}: median ${ms[Math.floor(ms.length / 2)]!.toFixed(1)} ms, p95 ${ms[Math.floor(ms.length * 0.95)]!.toFixed(1)} ms`);
}
await time('5,000-job fan-out from a child', fan[17]!.id);
await time('2,000-job chain from its middle', chain[1_000]!.id);
await s.close();
