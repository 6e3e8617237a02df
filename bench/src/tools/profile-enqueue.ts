/**
 * Profile leasehold's enqueue in one process: bulk (client.enqueueMany, 1,000 per call) or
 * single (one client.enqueue per job, awaited one after the other, as the bench does):
 *   node --import tsx src/tools/profile-enqueue.ts postgres 20000 [bulk|single] [system id]
 * With PROFILE_OUT=file.cpuprofile, a CPU profile of the enqueue alone.
 */
import { findSystem } from '../systems/index.ts';
import { profileSection } from './profiling.ts';

const [db = 'postgres', nArg = '20000', mode = 'bulk', systemId] = process.argv.slice(2);
const n = Number(nArg);
const sys = findSystem(systemId ?? `leasehold-${db}`);
await sys.reset();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
const stopProfile = await profileSection();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
if (mode === 'single') for (const x of items) await p.enqueueOne(x);
else for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
await stopProfile();
console.log(JSON.stringify({ system: sys.id, mode, db, n, wallMs: Math.round(wall), cpuMs: Math.round((cpu.user + cpu.system) / 1000), sysMs: Math.round(cpu.system / 1000), jobsPerS: Math.round(n / (wall / 1000)) }));
await p.close();
await sys.cleanup();
process.exit(0);
