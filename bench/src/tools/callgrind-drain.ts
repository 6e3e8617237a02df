/**
 * Instructions per job of a SQLite drain, counted by callgrind: deterministic where timings on
 * this shared machine are not. Instrumentation is switched on for the drain alone (not module
 * loading, tsx, seeding):
 *   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=out.cg \
 *     "$(../scripts/node.sh 24 which node)" --import tsx src/tools/callgrind-drain.ts worker 5000 10
 *   callgrind_annotate --inclusive=yes out.cg | grep -E 'sqlite3_step |JS_all|JS_run'
 * `worker n c`: a Worker drains n no-op jobs at concurrency c (runtime and storage);
 * `storage n batch`: claims of `batch` and their successes straight on the storage.
 * Divide the "I refs" valgrind prints by n. BENCH_LEASEHOLD_SRC picks the build, as everywhere.
 */
import { execFileSync } from 'node:child_process';
import { lh, seededStorage } from './seeded.ts';

const [mode = 'worker', nArg = '5000', kArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const k = Number(kArg);
process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
const { storage, cleanup } = await seededStorage('sqlite', n);
const instrument = (on: boolean): void => {
  execFileSync('callgrind_control', ['-i', on ? 'on' : 'off', String(process.pid)], { stdio: 'ignore' });
};

instrument(true);
if (mode === 'worker') {
  let done = 0;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  const noop = lh.defineJob({ type: 'noop', maxAttempts: 5, handler: () => void (++done === n && resolve()) });
  const w = new lh.Worker({ storage, jobs: [noop], concurrency: k });
  await w.start();
  await all;
  await w.stop({ deadlineMs: 5_000 });
} else {
  for (let done = 0; done < n;) {
    const jobs = await storage.leases.claim({ workerId: 'callgrind', types: ['noop'], queues: null, limit: k, leaseMs: 30_000 });
    if (jobs.length === 0) throw new Error(`claimed nothing after ${done}`);
    await storage.leases.finish({ items: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } })) });
    done += jobs.length;
  }
}
instrument(false);
await storage.close();
await cleanup();
console.log(`${mode} drain of ${n} (${mode === 'worker' ? `concurrency ${k}` : `claims of ${k}`}): divide callgrind's I refs by ${n}`);
process.exit(0);
