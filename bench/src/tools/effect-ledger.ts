/**
 * What `ctx.once` costs: claims `n` jobs, then `concurrency` loops reserve and record one new
 * effect key per job (`effects.reserve` + `effects.complete`, the two writes of a `ctx.once`) and
 * print pairs per second and the median time of each call.
 *   node --import tsx src/tools/effect-ledger.ts postgres|sqlite|mysql [n] [concurrency]
 * Each call is one commit on PostgreSQL and MySQL/MariaDB, so this is bounded by the database's
 * commit path, not by the worker.
 */
import { seededStorage } from './seeded.ts';

const [db = 'postgres', nArg = '2000', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const concurrency = Number(cArg);
const { storage, cleanup } = await seededStorage(db, n);
type Claimed = Awaited<ReturnType<typeof storage.leases.claim>>[number];
const claimed: Claimed[] = [];
while (claimed.length < n) {
  const batch = await storage.leases.claim({ workerId: 'effect-ledger', types: ['noop'], queues: null, limit: Math.min(500, n - claimed.length), leaseMs: 600_000 });
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
      const r = await storage.effects.reserve(params);
      if (r.state !== 'reserved') throw new Error(`job ${job.id}: reserve answered ${r.state}`);
      const b = performance.now();
      if (!(await storage.effects.complete({ ...params, result: { ok: true } }))) throw new Error(`job ${job.id}: record refused`);
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
await cleanup();
