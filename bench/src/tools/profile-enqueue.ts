/**
 * Profile leasehold's bulk enqueue (client.enqueueMany, 1,000 per call) in one process:
 *   node --import tsx --cpu-prof --cpu-prof-dir=results/prof src/tools/profile-enqueue.ts postgres 20000
 */
import { findSystem } from '../systems/index.ts';

const [db = 'postgres', nArg = '20000'] = process.argv.slice(2);
const n = Number(nArg);
const sys = findSystem(`leasehold-${db}`);
await sys.reset();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ db, n, wallMs: Math.round(wall), cpuMs: Math.round((cpu.user + cpu.system) / 1000), jobsPerS: Math.round(n / (wall / 1000)) }));
await p.close();
await sys.cleanup();
process.exit(0);
