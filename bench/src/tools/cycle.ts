/**
 * The storage layer alone, without the worker: repeated claim → finish cycles of `batch` jobs
 * on one connection at a time, timing each call. Medians are far less noisy than a full drain
 * on a shared machine, so before/after comparisons of the SQL use this.
 *   node --import tsx src/tools/cycle.ts postgres|sqlite|mysql [batch] [rounds]
 */
import { seededStorage } from './seeded.ts';

const [db = 'postgres', bArg = '300', rArg = '30'] = process.argv.slice(2);
const batch = Number(bArg);
const rounds = Number(rArg);
const { storage: s, cleanup } = await seededStorage(db, batch * rounds);
const claimMs: number[] = [];
const finishMs: number[] = [];
const cpu0 = process.cpuUsage();
for (let r = 0; r < rounds; r++) {
  let t = performance.now();
  const jobs = await s.leases.claim({ workerId: 'w', types: ['noop'], queues: null, limit: batch, leaseMs: 30_000 });
  claimMs.push(performance.now() - t);
  t = performance.now();
  await s.leases.finish({ items: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
  finishMs.push(performance.now() - t);
}
const cpu = process.cpuUsage(cpu0);
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`${db} batch ${batch}: claim ${med(claimMs).toFixed(2)} ms (${((1000 * med(claimMs)) / batch).toFixed(1)} µs/job), finish ${med(finishMs).toFixed(2)} ms (${((1000 * med(finishMs)) / batch).toFixed(1)} µs/job), node cpu ${((cpu.user + cpu.system) / (batch * rounds)).toFixed(1)} µs/job`);
await s.close();
await cleanup();
process.exit(0);
