/**
 * What leasehold's guarantees cost a PostgreSQL drain, side by side with graphile-worker's fast
 * preset in one process each, drains alternated:
 *   node --import tsx src/tools/guarantee-cost-pg.ts [n] [repeats] [variant…]
 * Variants (leasehold's worker unchanged; only the text of the finish statement its storage
 * runs is replaced, on that worker's storage, before the worker starts):
 * - leasehold: as shipped;
 * - graphile: graphile-worker, localQueue + batched completions (the harness's preset);
 * - no-history: a success writes no attempt row (what keeping attempt history costs);
 * - delete: a success deletes the job row, as graphile-worker does, and writes no attempt row
 *   (what keeping finished jobs and their history costs). Fence, row locks and tail unchanged.
 * The last two are measurements only: leasehold never runs without its history. Each patch
 * throws when the shipped finish no longer has the text it replaces.
 */
import pg from 'pg';
import { PG_URL, checkpointPostgres } from '../common.ts';
import { findSystem } from '../systems/index.ts';
import { storageHooks } from '../systems/leasehold.ts';
import { serverCpuMs } from './profiling.ts';

type Patch = (finish: string) => string;

function replaceOnce(text: string, find: RegExp | string, by: string): string {
  const n = typeof find === 'string' ? text.split(find).length - 1 : (text.match(new RegExp(find.source, 'g')) ?? []).length;
  if (n !== 1) throw new Error(`the shipped finish has ${n} matches of ${String(find)}: update this tool's patch`);
  return text.replace(find, by);
}
// the attempt row is written from upd; a success (every item of a no-op drain) then writes none
const noHistory: Patch = (f) => replaceOnce(f, '  FROM upd\n)', "  FROM upd WHERE att_outcome IS DISTINCT FROM 'succeeded'\n)");
const deleteRow: Patch = (f) =>
  replaceOnce(noHistory(f), /upd AS \(\n {2}UPDATE (\S+) j\n[\s\S]*? {2}FROM fenced l\n {2}WHERE j\.id = l\.id\n {2}RETURNING l\.ord, j\.id, j\.status,/,
    'upd AS (\n  DELETE FROM $1 j USING fenced l WHERE j.id = l.id\n  RETURNING l.ord, j.id, l.status,');

const variants: Record<string, { system: string; patch?: Patch }> = {
  leasehold: { system: 'leasehold-postgres' },
  graphile: { system: 'graphile-batched' },
  'no-history': { system: 'leasehold-postgres', patch: noHistory },
  delete: { system: 'leasehold-postgres', patch: deleteRow },
};

/** Swap the finish statement of a worker's storage (PostgresLeases' prepared `hot.finish`) for the patched text. */
function patchFinish(patch: Patch): (storage: unknown) => void {
  return (storage) => {
    const hot = (storage as { leases?: { hot?: { finish?: { name?: string; text: string } } } }).leases?.hot;
    if (!hot?.finish) throw new Error('no leases.hot.finish on this storage: update this tool');
    const text = patch(hot.finish.text);
    hot.finish = { ...hot.finish, text, ...(hot.finish.name ? { name: `${hot.finish.name.slice(0, 40)}_${text.length}` } : {}) };
  };
}

const [nArg = '20000', repsArg = '5', ...picked] = process.argv.slice(2);
const n = Number(nArg);
const names = picked.length > 0 ? picked : Object.keys(variants);
for (const v of names) if (!variants[v]) throw new Error(`unknown variant ${v}: ${Object.keys(variants).join(', ')}`);

/** The server's current WAL position in bytes. */
async function walLsn(): Promise<bigint> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    const r = await c.query(`SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS b`);
    return BigInt((r.rows[0] as { b: string }).b.split('.')[0] as string);
  } finally {
    await c.end();
  }
}

/** One drain of n queued jobs by one worker (c=10) in this process; jobs/s, server µs and WAL bytes per job. */
async function drainOnce(v: string): Promise<{ rate: number; server: number; wal: number }> {
  const { system, patch } = variants[v] as { system: string; patch?: Patch };
  const sys = findSystem(system);
  await sys.reset();
  if (patch) storageHooks.onWorkerStorage = patchFinish(patch);
  else delete storageHooks.onWorkerStorage;
  const p = await sys.producer();
  const payloads = Array.from({ length: n }, (_, i) => ({ i }));
  for (let i = 0; i < n; i += 1000) await p.enqueueBulk(payloads.slice(i, i + 1000));
  await checkpointPostgres();
  let done = 0;
  let resolve!: () => void;
  const all = new Promise<void>((ok) => (resolve = ok));
  const wal0 = await walLsn();
  const server0 = serverCpuMs();
  const t0 = performance.now();
  const w = await sys.worker({ concurrency: 10, onJob: () => void (++done === n && resolve()) });
  await all;
  while ((await p.remaining()) > 0) await new Promise((ok) => setTimeout(ok, 5));
  const wall = performance.now() - t0;
  const server = Math.round(((serverCpuMs() - server0) * 1000) / n);
  await w.stop();
  const wal = Number((await walLsn()) - wal0) / n;
  await p.close();
  return { rate: Math.round(n / (wall / 1000)), server, wal: Math.round(wal) };
}

const runs = new Map<string, { rate: number; server: number; wal: number }[]>(names.map((v) => [v, []]));
for (let r = 0; r < Number(repsArg); r++) for (const v of names) runs.get(v)?.push(await drainOnce(v));
for (const id of new Set(names.map((v) => variants[v]?.system as string))) await findSystem(id).cleanup();

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
const graphile = runs.has('graphile') ? median((runs.get('graphile') ?? []).map((x) => x.rate)) : undefined;
for (const [v, rs] of runs) {
  const rate = median(rs.map((x) => x.rate));
  const vs = graphile ? `  ÷ graphile ${(rate / graphile).toFixed(2)}×` : '';
  console.log(`${v.padEnd(11)} ${String(rate).padStart(6)} jobs/s (${rs.map((x) => x.rate).join(' ')}), server ${median(rs.map((x) => x.server))} µs/job, WAL ${median(rs.map((x) => x.wal))} B/job${vs}`);
}
process.exit(0);
