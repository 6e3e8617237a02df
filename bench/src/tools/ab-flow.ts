/**
 * What flow control costs and how well a rate limit holds (issue 22):
 *   node --import tsx src/tools/ab-flow.ts keys  <db> [keys=1000] [perKey=100] [c=10] [reps=3]
 *     the same drain of keys × perKey jobs without limits, with the type's `keyConcurrency: 2`
 *     and with its queue's `queueLimits` maxRunningPerKey 2, alternated run by run; prints jobs/s
 *     for each and each limited ÷ free
 *   node --import tsx src/tools/ab-flow.ts rate <db> [limit=500] [seconds=20] [processes=4] [scope=type]
 *     `processes` workers (child processes) drain a type (scope `queue`: its queue) limited to `limit` starts per second;
 *     prints the starts per second measured from the attempt history over `seconds` (after the
 *     bucket's initial burst) and its distance from the limit
 * Each run is a child process (`--child …`) on a fresh database.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../common.ts';
import { PG_URL, checkpointPostgres, sqliteDir } from '../common.ts';

type Lh = typeof import('../../../src/index.ts');
const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const lh = (): Promise<Lh> => import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js') as Promise<Lh>;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;

function url(db: Db, name: string): string {
  if (db === 'postgres') return `${PG_URL}?schema=${name}`;
  if (db === 'mysql') return `${process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306'}/${name}`;
  return `sqlite:${join(sqliteDir(), `${name}.db`)}`;
}

/** A fresh, migrated database of this name (PostgreSQL schema, MySQL database, SQLite file). */
async function fresh(db: Db, name: string): Promise<Awaited<ReturnType<Lh['openStorage']>>> {
  const { openStorage } = await lh();
  if (db === 'postgres') {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await c.end();
    await checkpointPostgres();
  } else if (db === 'mysql') {
    const mysql = (await import('mysql2/promise')).default;
    const c = await mysql.createConnection(process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306');
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
  } else {
    const { rmSync } = await import('node:fs');
    rmSync(join(sqliteDir(), `${name}.db`), { force: true });
  }
  const storage = await openStorage(url(db, name));
  await storage.migrate();
  return storage;
}

type Mode = 'free' | 'limited' | 'queue';

async function keysChild(mode: Mode, db: Db, keys: number, perKey: number, c: number): Promise<void> {
  const { Worker, createClient, defineJob } = await lh();
  const storage = await fresh(db, 'bench_flow');
  let done = 0;
  const n = keys * perKey;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  const job = defineJob<{ k: string }>({
    type: 'tenant', queue: 'tenants', maxAttempts: 5, handler: () => void (++done === n && resolve()),
    ...(mode === 'limited' ? { keyConcurrency: 2, concurrencyKey: (p: { k: string }) => p.k } : {}),
  });
  const queueLimits = mode === 'queue' ? { tenants: { maxRunningPerKey: 2 } } : undefined;
  const client = createClient({ storage, jobs: [job] });
  for (let i = 0; i < perKey; i++) {
    for (let from = 0; from < keys; from += 1000) {
      await client.enqueueMany(Array.from({ length: Math.min(1000, keys - from) }, (_, j) => ({ type: 'tenant', payload: { k: `k${from + j}` }, options: { concurrencyKey: `k${from + j}` } })));
    }
  }
  const t0 = performance.now();
  const worker = new Worker({ storage, jobs: [job], concurrency: c, tracing: false, sweeper: false, scheduler: false, ...(queueLimits ? { queueLimits } : {}) });
  await worker.start();
  await all;
  const wall = performance.now() - t0;
  await worker.stop({ deadlineMs: 5_000 });
  await storage.close();
  console.log(JSON.stringify({ mode, db, n, jobsPerS: Math.round(n / (wall / 1000)) }));
  process.exit(0);
}

async function rateWorker(db: Db, limit: number, seconds: number, scope: string): Promise<void> {
  const { Worker, defineJob, openStorage } = await lh();
  const storage = await openStorage(url(db, 'bench_rate'));
  const rateLimit = { limit, periodMs: 1000 };
  const job = defineJob({ type: 'limited', ...(scope === 'queue' ? {} : { rateLimit }), handler: () => {} });
  const queueLimits = scope === 'queue' ? { default: { rate: rateLimit } } : undefined;
  const worker = new Worker({ storage, jobs: [job], concurrency: 10, pollIntervalMs: 20, tracing: false, sweeper: false, scheduler: false, ...(queueLimits ? { queueLimits } : {}) });
  await worker.start();
  await new Promise((r) => setTimeout(r, (seconds + 3) * 1000));
  await worker.stop({ deadlineMs: 5_000 });
  await storage.close();
  process.exit(0);
}

async function rate(db: Db, limit: number, seconds: number, processes: number, scope: string): Promise<void> {
  const { createClient } = await lh();
  const storage = await fresh(db, 'bench_rate');
  const client = createClient({ storage });
  const n = limit * (seconds + 5);
  for (let i = 0; i < n; i += 1000) await client.enqueueMany(Array.from({ length: Math.min(1000, n - i) }, () => ({ type: 'limited', payload: {} })));
  const kids = Array.from({ length: processes }, () => spawn(process.execPath, ['--import', 'tsx', self, '--rate-worker', db, String(limit), String(seconds), scope], { stdio: 'inherit', env: { ...process.env, LEASEHOLD_LOG_LEVEL: 'silent' } }));
  await Promise.all(kids.map((k) => new Promise((r) => k.on('exit', r))));
  const jobs = await storage.jobs.list({ status: 'succeeded', limit: n });
  const starts = jobs.map((j) => j.startedAt?.getTime() ?? 0).sort((a, b) => a - b);
  // the bucket starts full: leave its burst (the first second) out
  const from = (starts[0] ?? 0) + 1000;
  const inWindow = starts.filter((t) => t >= from && t < from + seconds * 1000).length;
  const perS = inWindow / seconds;
  console.log(`${db} ${scope} rate limit ${limit}/s, ${processes} processes: ${perS.toFixed(1)} starts/s over ${seconds} s (${(((perS - limit) / limit) * 100).toFixed(2)} % off); ${jobs.length} started in all`);
  await storage.close();
}

if (args[0] === '--child') await keysChild(args[1] as Mode, args[2] as Db, Number(args[3]), Number(args[4]), Number(args[5]));
else if (args[0] === '--rate-worker') await rateWorker(args[1] as Db, Number(args[2]), Number(args[3]), args[4] ?? 'type');
else if (args[0] === 'rate') await rate((args[1] ?? 'postgres') as Db, Number(args[2] ?? 500), Number(args[3] ?? 20), Number(args[4] ?? 4), args[5] ?? 'type');
else {
  const [, db = 'postgres', keys = '1000', perKey = '100', c = '10', reps = '3'] = args;
  const runs: Record<Mode, number[]> = { limited: [], free: [], queue: [] };
  const modes: Mode[] = ['free', 'limited', 'queue'];
  for (let r = 0; r < Number(reps); r++) {
    for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', mode, db, keys, perKey, c], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LEASEHOLD_LOG_LEVEL: 'silent' } });
      const line = out.trim().split('\n').find((l) => l.startsWith('{')) ?? '{}';
      runs[mode].push((JSON.parse(line) as { jobsPerS: number }).jobsPerS);
      console.error(`rep ${r + 1} ${mode}: ${line}`);
    }
  }
  const [free, limited, queue] = [median(runs.free), median(runs.limited), median(runs.queue)];
  console.log(
    `${db} ${keys} keys × ${perKey} jobs, c=${c}: free ${free} jobs/s (${runs.free.join(', ')}), keyConcurrency 2 ${limited} jobs/s (${runs.limited.join(', ')}), ` +
      `queue maxRunningPerKey 2 ${queue} jobs/s (${runs.queue.join(', ')}); type ÷ free ${(limited / free).toFixed(3)}, queue ÷ free ${(queue / free).toFixed(3)}`,
  );
}
