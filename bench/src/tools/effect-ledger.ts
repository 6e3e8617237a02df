/**
 * What `ctx.once` costs: claims `n` jobs, then `concurrency` loops reserve and record one new
 * effect key per job (`reserveEffect` + `completeEffect`, the two writes of a `ctx.once`) and
 * print pairs per second and the median time of each call.
 *   node --import tsx src/tools/effect-ledger.ts postgres|sqlite|mysql [n] [concurrency]
 * Each call is one commit on PostgreSQL and MySQL/MariaDB, so this is bounded by the database's
 * commit path, not by the worker.
 */
import { join } from 'node:path';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';
import { findSystem } from '../systems/index.ts';
const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');

const [db = 'postgres', nArg = '2000', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const concurrency = Number(cArg);
const sys = findSystem(`leasehold-${db}`);
await sys.reset();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
await p.close();
const url = db === 'postgres' ? `${PG_URL}?schema=bench_leasehold` : db === 'mysql' ? `${MYSQL_URL}/bench_leasehold` : `sqlite:${join(sqliteDir(), 'leasehold.db')}`;
const storage = await lh.openStorage(url);
type Claimed = Awaited<ReturnType<typeof storage.claimJobs>>[number];
const claimed: Claimed[] = [];
while (claimed.length < n) {
  const batch = await storage.claimJobs({ workerId: 'effect-ledger', types: ['noop'], queues: null, limit: Math.min(500, n - claimed.length), leaseMs: 600_000 });
  if (batch.length === 0) break;
  claimed.push(...batch);
}

const reserveMs: number[] = [];
const recordMs: number[] = [];
let next = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < claimed.length) {
      const job = claimed[next++]!;
      const params = { key: `send:${job.id}`, jobId: job.id, leaseToken: job.leaseToken };
      const a = performance.now();
      const r = await storage.reserveEffect(params);
      if (r.state !== 'reserved') throw new Error(`job ${job.id}: reserve answered ${r.state}`);
      const b = performance.now();
      if (!(await storage.completeEffect({ ...params, result: { ok: true } }))) throw new Error(`job ${job.id}: record refused`);
      reserveMs.push(b - a);
      recordMs.push(performance.now() - b);
    }
  }),
);
const ms = performance.now() - t0;
const median = (xs: number[]): string => [...xs].sort((x, y) => x - y)[xs.length >> 1]!.toFixed(2);
console.log(
  `${db}: ${claimed.length} reserve+record pairs at concurrency ${concurrency} in ${ms.toFixed(0)} ms: ${Math.round((claimed.length * 1000) / ms)} pairs/s; median reserve ${median(reserveMs)} ms, record ${median(recordMs)} ms`,
);
await storage.close();
await sys.cleanup();
