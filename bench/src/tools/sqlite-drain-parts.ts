/**
 * Where a SQLite drain's storage time goes, without the worker: claims of `batch` jobs and their
 * successful finishes in writes of `finishBatch`, straight on the storage, each part timed
 * (wall and CPU are one here: better-sqlite3 is synchronous).
 *   node --import tsx src/tools/sqlite-drain-parts.ts [n] [batch] [finishBatch] [rounds]
 * Prints µs per job of the claim and of the finish, median of `rounds` drains of `n` jobs.
 * BENCH_LEASEHOLD_SRC picks the build, as everywhere.
 */
import { lh, seededStorage } from './seeded.ts';

const [nArg = '20000', batchArg = '100', finishArg = '100', roundsArg = '5'] = process.argv.slice(2);
const n = Number(nArg);
const batch = Number(batchArg);
const finishBatch = Number(finishArg);
type Finish = Parameters<Awaited<ReturnType<typeof lh.openStorage>>['leases']['finish']>[0]['items'][number];

const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
const claimUs: number[] = [];
const finishUs: number[] = [];
for (let r = 0; r < Number(roundsArg); r++) {
  const { storage, cleanup } = await seededStorage('sqlite', n);
  let claimMs = 0;
  let finishMs = 0;
  let pending: Finish[] = [];
  const flush = async (): Promise<void> => {
    const t = performance.now();
    const res = await storage.leases.finish({ items: pending });
    finishMs += performance.now() - t;
    if (res.some((x) => !x.applied)) throw new Error('a finish did not land');
    pending = [];
  };
  let done = 0;
  while (done < n) {
    const t = performance.now();
    const jobs = await storage.leases.claim({ workerId: 'parts', types: ['noop'], queues: null, limit: batch, leaseMs: 30_000 });
    claimMs += performance.now() - t;
    if (jobs.length === 0) throw new Error(`claimed nothing after ${done}`);
    for (const j of jobs) {
      pending.push({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } });
      if (pending.length >= finishBatch) await flush();
    }
    done += jobs.length;
  }
  if (pending.length > 0) await flush();
  claimUs.push((claimMs * 1000) / n);
  finishUs.push((finishMs * 1000) / n);
  await storage.close();
  await cleanup();
}
const f = (xs: number[]): string => `${med(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
console.log(`n ${n}, claim ${batch}, finish ${finishBatch}: µs/job claim ${f(claimUs)}, finish ${f(finishUs)}, both ${med(claimUs.map((c, i) => c + (finishUs[i] as number))).toFixed(2)}`);
process.exit(0);
