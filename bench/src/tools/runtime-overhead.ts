/**
 * The worker runtime's own CPU per job: drains `n` no-op jobs from the in-memory storage (no
 * database), so what is left is claim bookkeeping, attempts, timers, logging and finishes.
 *   node --import tsx src/tools/runtime-overhead.ts [n] [concurrency]
 */
const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
const { memoryStorage } = (await import(process.env.BENCH_LEASEHOLD_SRC ? process.env.BENCH_LEASEHOLD_SRC.replace(/index\.(ts|js)$/, 'storage/memory/index.$1') : '../../../dist/storage/memory/index.js')) as typeof import('../../../src/storage/memory/index.ts');

process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
export {};
const [nArg = '50000', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const storage = memoryStorage();
await storage.migrate();
let done = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
const job = lh.defineJob({ type: 'noop', handler: () => void (++done === n && resolve()) });
const client = lh.createClient({ storage, jobs: [job] });
for (let i = 0; i < n; i += 1000) await client.enqueueMany(Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ type: 'noop', payload: { i: i + k } })));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const w = new lh.Worker({ storage, jobs: [job], concurrency: Number(cArg), scheduler: false, sweeper: false });
await w.start();
await all;
await w.stop();
const cpu = process.cpuUsage(cpu0);
console.log(`runtime on memory storage: ${n} jobs, ${Math.round(n / ((performance.now() - t0) / 1000))} jobs/s, cpu ${((cpu.user + cpu.system) / n).toFixed(1)} µs/job`);
process.exit(0);
