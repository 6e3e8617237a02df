/**
 * Where does a leasehold drain wait? Drains `n` no-op jobs with one worker and times every
 * storage call (count, total ms, mean rows per call), so claim/finish/heartbeat costs show.
 *   node --import tsx src/tools/time-storage.ts postgres|sqlite|mysql [n] [concurrency]
 */
import { lh, seededStorage } from './seeded.ts';

const [db = 'postgres', nArg = '20000', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const { storage, cleanup } = await seededStorage(db, n);
const stats = new Map<string, { calls: number; ms: number; rows: number }>();
const timed = new Proxy(storage, {
  get(t, k, r) {
    const v = Reflect.get(t, k, r);
    if (typeof v !== 'function') return v;
    return (...args: unknown[]) => {
      const t0 = performance.now();
      const out = v.apply(t, args);
      if (!(out instanceof Promise)) return out;
      return out.then((res: unknown) => {
        const s = stats.get(String(k)) ?? { calls: 0, ms: 0, rows: 0 };
        s.calls++;
        s.ms += performance.now() - t0;
        s.rows += Array.isArray(res) ? res.length : 0;
        stats.set(String(k), s);
        return res;
      });
    };
  },
});
let done = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
const job = lh.defineJob({ type: 'noop', handler: () => void (++done === n && resolve()) });
const t0 = performance.now();
const w = new lh.Worker({ storage: timed, jobs: [job], concurrency: Number(cArg), scheduler: false });
await w.start();
await all;
await w.stop();
const wall = performance.now() - t0;
console.log(`${db}: ${n} jobs in ${Math.round(wall)} ms = ${Math.round(n / (wall / 1000))} jobs/s`);
for (const [k, s] of stats) console.log(`  ${k.padEnd(16)} ${String(s.calls).padStart(6)} calls  ${(s.ms / s.calls).toFixed(2).padStart(8)} ms/call  ${(s.rows / s.calls).toFixed(1).padStart(7)} rows/call  ${Math.round(s.ms)} ms total`);
await storage.close();
await cleanup();
process.exit(0);
