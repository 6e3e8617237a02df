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
import { runIndexAb } from './index-ab.ts';

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

await runIndexAb({
  a: await open('ab_claim_narrow', NARROW),
  b: await open('ab_claim_wide', WIDE),
  rounds, n, job, types,
  legend: 'A narrow, B wide claim index',
  title: 'mysql',
  detail: `, ${types.length} of 8 types served`,
});
