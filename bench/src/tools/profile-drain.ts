/**
 * Profile one leasehold drain in a single process (for `node --cpu-prof`):
 *   node --import tsx --cpu-prof --cpu-prof-dir=results/prof src/tools/profile-drain.ts postgres 20000 10
 * Prints the wall time, this process's CPU time and the jobs/s. A fourth argument drains with
 * another system of the harness instead (e.g. graphile-batched), for CPU per job side by side.
 */
import { findSystem } from '../systems/index.ts';

const [db = 'postgres', nArg = '20000', cArg = '10', systemId] = process.argv.slice(2);
const n = Number(nArg);
const sys = findSystem(systemId ?? `leasehold-${db}`);
await sys.reset();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
let done = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const w = await sys.worker({ concurrency: Number(cArg), onJob: () => void (++done === n && resolve()) });
await all;
while ((await p.remaining()) > 0) await new Promise((r) => setTimeout(r, 5));
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ system: sys.id, db, n, concurrency: Number(cArg), wallMs: Math.round(wall), cpuMs: Math.round((cpu.user + cpu.system) / 1000), jobsPerS: Math.round(n / (wall / 1000)) }));
await w.stop();
await p.close();
await sys.cleanup();
process.exit(0);
