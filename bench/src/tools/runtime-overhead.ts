/**
 * The worker runtime's own CPU per job: drains `n` no-op jobs from a storage whose claims and
 * finishes cost next to nothing (claimed rows are copies of one template, every finish
 * applies), so what is left is claim bookkeeping, attempts, timers, logging and finishes.
 * The in-memory storage is not used for the jobs: its claim scans every job, which at this
 * scale costs far more than the runtime itself.
 *   node --import tsx src/tools/runtime-overhead.ts [n] [concurrency]
 * PROFILE_OUT / ALLOC_OUT profile the drain alone (see profiling.ts).
 */
import { profileSection } from './profiling.ts';

const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
const { memoryStorage } = (await import(process.env.BENCH_LEASEHOLD_SRC ? process.env.BENCH_LEASEHOLD_SRC.replace(/index\.(ts|js)$/, 'storage/memory/index.$1') : '../../../dist/storage/memory/index.js')) as typeof import('../../../src/storage/memory/index.ts');
type Storage = import('../../../src/core/storage.ts').Storage;
type ClaimedJob = import('../../../src/core/storage.ts').ClaimedJob;

process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
export {};
const [nArg = '200000', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);

// one real claimed row as the template every claimed job is copied from
const memory = memoryStorage();
await memory.migrate();
const noop = lh.defineJob({ type: 'noop', handler: () => {} });
await lh.createClient({ storage: memory, jobs: [noop] }).enqueue('noop', { i: 0 });
const [template] = await memory.leases.claim({ workerId: 'w', types: ['noop'], queues: null, limit: 1, leaseMs: 30_000 });
if (!template) throw new Error('no template job');

let claimed = 0;
let finished = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
// the worker's calls go to the in-memory storage, except the three the drain repeats per job
const leases: Storage['leases'] = {
  ...memory.leases,
  findExpired: (p) => memory.leases.findExpired(p),
  claim: async (p) => {
    const k = Math.min(p.limit, n - claimed);
    const lockedUntil = new Date(Date.now() + p.leaseMs);
    return Array.from({ length: k }, (): ClaimedJob => {
      const id = String(++claimed);
      return { ...template, id, leaseToken: `t.${id}`, lockedUntil, payload: { i: claimed } };
    });
  },
  finish: async ({ items }) => {
    finished += items.length;
    if (finished === n) setImmediate(resolve);
    return items.map((p) => ({ id: p.id, applied: true }));
  },
  heartbeat: async () => ({ lost: [] }),
};
const storage = new Proxy(memory, {
  get(target, prop, receiver) {
    if (prop === 'leases') return leases;
    return Reflect.get(target, prop, receiver) as unknown;
  },
}) as Storage;

const stopProfile = await profileSection();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const w = new lh.Worker({ storage, jobs: [noop], concurrency: Number(cArg), scheduler: false, sweeper: false });
await w.start();
await all;
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
await stopProfile();
await w.stop();
console.log(`runtime alone: ${n} jobs, ${Math.round(n / (ms / 1000))} jobs/s, cpu ${((cpu.user + cpu.system) / n).toFixed(2)} µs/job`);
process.exit(0);
