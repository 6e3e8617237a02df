/**
 * Count leasehold's storage calls during one drain (claims, finishes, heartbeats) and the jobs
 * each one carried: node --import tsx src/tools/count-statements.ts postgres 20000 10
 */
import { PostgresStorage } from '../../../src/storage/postgres/postgres-storage.ts';
import { findSystem } from '../systems/index.ts';

const [db = 'postgres', nArg = '20000', cArg = '10'] = process.argv.slice(2);
const counts: Record<string, { calls: number; items: number; ms: number }> = {};
const protos: Record<string, object> = { postgres: PostgresStorage.prototype };
if (db === 'sqlite') protos.sqlite = (await import('../../../src/storage/sqlite/sqlite-storage.ts')).SqliteStorage.prototype;
if (db === 'mysql') protos.mysql = (await import('../../../src/storage/mysql/mysql-storage.ts')).MysqlStorage.prototype;
const proto = protos[db] as Record<string, (...a: unknown[]) => Promise<unknown>>;
for (const m of ['claimJobs', 'finishJobs', 'heartbeat', 'insertJobs', 'heartbeatWorker', 'findExpiredLeases']) {
  const orig = proto[m] as (...a: unknown[]) => Promise<unknown>;
  proto[m] = async function (this: unknown, ...a: unknown[]) {
    const t = performance.now();
    const r = await orig.apply(this, a);
    const c = (counts[m] ??= { calls: 0, items: 0, ms: 0 });
    c.calls++;
    c.ms += performance.now() - t;
    c.items += Array.isArray(r) ? r.length : Array.isArray(a[0]) ? (a[0] as unknown[]).length : 0;
    return r;
  };
}
const n = Number(nArg);
const sys = findSystem(`leasehold-${db}`);
await sys.reset();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
for (const k of Object.keys(counts)) delete counts[k];
let done = 0;
let resolve!: () => void;
const all = new Promise<void>((r) => (resolve = r));
const t0 = performance.now();
const w = await sys.worker({ concurrency: Number(cArg), onJob: () => void (++done === n && resolve()) });
await all;
while ((await p.remaining()) > 0) await new Promise((r) => setTimeout(r, 5));
const wall = performance.now() - t0;
await w.stop();
await p.close();
await sys.cleanup();
console.log(JSON.stringify({ db, n, concurrency: Number(cArg), jobsPerS: Math.round(n / (wall / 1000)) }));
for (const [m, c] of Object.entries(counts)) {
  console.log(`${m.padEnd(18)} calls ${String(c.calls).padStart(6)}  jobs/call ${(c.items / c.calls).toFixed(1).padStart(6)}  mean ${(c.ms / c.calls).toFixed(2)} ms/call  total ${(c.ms / 1000).toFixed(1)} s`);
}
process.exit(0);
