/**
 * One drain in a single process:
 *   node --import tsx src/tools/profile-drain.ts postgres 40000 10 [system id]
 * Prints the wall time, the jobs/s, and the CPU of the drain alone: this process's and the
 * database server's (read from /proc; backends of other clients count too, so run it alone).
 * A fourth argument drains with another system of the harness instead (e.g. graphile-batched),
 * for CPU per job side by side. With PROFILE_OUT=file.cpuprofile, profiles the drain alone
 * (summarize with summarize-profile.ts).
 */
import { checkpointPostgres } from '../common.ts';
import { findSystem } from '../systems/index.ts';
import { profileSection, serverCpuMs } from './profiling.ts';

const [db = 'postgres', nArg = '20000', cArg = '10', systemId] = process.argv.slice(2);
const n = Number(nArg);
const sys = findSystem(systemId ?? `leasehold-${db}`);
await sys.reset();
if (sys.db === 'postgres') await checkpointPostgres(); // as the harness does before each measurement
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
let done = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
// PROFILE_OUT=file.cpuprofile: a CPU profile of the drain alone (not the module loading and enqueue).
const stopProfile = await profileSection();
const cpu0 = process.cpuUsage();
const server0 = serverCpuMs();
const t0 = performance.now();
const w = await sys.worker({ concurrency: Number(cArg), onJob: () => void (++done === n && resolve()) });
await all;
while ((await p.remaining()) > 0) await new Promise((r) => setTimeout(r, 5));
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const serverMs = serverCpuMs() - server0;
await stopProfile();
const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
console.log(JSON.stringify({
  system: sys.id, db, n, concurrency: Number(cArg), wallMs: Math.round(wall), jobsPerS: Math.round(n / (wall / 1000)),
  cpuMs, serverCpuMs: serverMs, usPerJob: { worker: Math.round((cpuMs * 1000) / n), server: Math.round((serverMs * 1000) / n) },
}));
await w.stop();
await p.close();
await sys.cleanup();
process.exit(0);
