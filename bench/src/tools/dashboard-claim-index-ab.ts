/**
 * What widening MariaDB's claim index by (type, queue) costs the hot paths, and what it buys the
 * dashboard: two databases alike but for that index, A (status, priority, run_at, id) and B
 * (status, priority, run_at, id, type, queue), take turns (order alternating) enqueueing a block
 * of jobs in runs of 100 and draining it (claim 100, finish 100); prints each round's times and
 * the median of B ÷ A. The worker serves all eight types, or with `unserved` six of them (the
 * other two stay queued and pile up, as a type without a live handler does).
 *
 *   node --import tsx src/tools/dashboard-claim-index-ab.ts [rounds] [jobs] [unserved]
 */
import mysql from 'mysql2/promise';
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MYSQL_URL } from '../common.ts';

const [roundsArg = '10', jobsArg = '5000', mode = 'all'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const n = Number(jobsArg);
const NARROW = '(status, priority, run_at, id)';
const WIDE = '(status, priority, run_at, id, type, queue)';

async function open(name: string, columns: string): Promise<Storage> {
  const c = await mysql.createConnection(MYSQL_URL);
  await c.query(`DROP DATABASE IF EXISTS ${name}`);
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const s = await openStorage(`${MYSQL_URL}/${name}`);
  await s.migrate();
  const d = await mysql.createConnection(`${MYSQL_URL}/${name}`);
  // -- leasehold bench: the claim index under test, whatever the migration wrote
  await d.query(`ALTER TABLE leasehold_jobs DROP KEY leasehold_jobs_claim, ADD KEY leasehold_jobs_claim ${columns}`);
  await d.end();
  return s;
}

const job = (i: number): NewJob => ({ queue: i % 3 === 0 ? 'mail' : 'default', type: `t${i % 8}`, payload: { i, note: 'hello world' }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const types = Array.from({ length: mode === 'unserved' ? 6 : 8 }, (_, i) => `t${i}`);

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

const a = await open('ab_claim_narrow', NARROW);
const b = await open('ab_claim_wide', WIDE);
const ratios = { insert: [] as number[], drain: [] as number[] };
for (let r = 0; r < rounds; r++) {
  const [first, second] = r % 2 === 0 ? [a, b] : [b, a];
  const x = await round(first);
  const y = await round(second);
  const [ra, rb] = r % 2 === 0 ? [x, y] : [y, x];
  ratios.insert.push(rb.insert / ra.insert);
  ratios.drain.push(rb.drain / ra.drain);
  console.log(`round ${r}: insert ${ra.insert.toFixed(0)} / ${rb.insert.toFixed(0)} ms, drain ${ra.drain.toFixed(0)} / ${rb.drain.toFixed(0)} ms (A narrow, B wide claim index)`);
}
const median = (v: number[]): number => [...v].sort((p, q) => p - q)[Math.floor(v.length / 2)]!;
console.log(`mysql: median B/A insert ${median(ratios.insert).toFixed(3)}, drain ${median(ratios.drain).toFixed(3)} (${rounds} rounds of ${n} jobs, ${types.length} of 8 types served)`);
await a.close();
await b.close();
