/**
 * What leasehold's guarantees cost a PostgreSQL drain, side by side with graphile-worker's fast
 * preset in one process each, drains alternated:
 *   node --import tsx src/tools/guarantee-cost-pg.ts [n] [repeats] [variant…]
 * Variants (leasehold's worker unchanged; only the body of the success finish it calls is
 * replaced, in the bench's scratch schema after each reset):
 * - leasehold: as shipped;
 * - graphile: graphile-worker, localQueue + batched completions (the harness's preset);
 * - no-history: the finish writes no attempt row (what keeping attempt history costs);
 * - delete: the finish deletes the job row, as graphile-worker does (what keeping finished
 *   jobs and their history costs).
 * The last two are measurements only: leasehold never runs without its history.
 */
import pg from 'pg';
import { PG_URL, checkpointPostgres } from '../common.ts';
import { findSystem } from '../systems/index.ts';
import { serverCpuMs } from './profiling.ts';

const S = 'bench_leasehold';
const successFinish = (body: string): string => `CREATE OR REPLACE FUNCTION ${S}.finish_succeeded(ids bigint[], tokens text[], worker text)
RETURNS TABLE (ord bigint) LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN RETURN QUERY ${body}; END $fn$`;
// the shipped finish's input, sorted by id so that row locks are taken in id order
const ITEMS = `WITH items AS (SELECT i.item_id, i.token, i.ord FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS i(item_id, token, ord) ORDER BY i.item_id)`;
const FENCE = `j.id = i.item_id AND j.lease_token = i.token AND (j.status = 'running') IS TRUE`;
const NOW = `date_trunc('milliseconds', now())`;

const variants: Record<string, { system: string; sql?: string }> = {
  leasehold: { system: 'leasehold-postgres' },
  graphile: { system: 'graphile-batched' },
  'no-history': {
    system: 'leasehold-postgres',
    sql: successFinish(`${ITEMS}, upd AS (UPDATE ${S}.jobs j SET status = 'succeeded', locked_by = NULL, lease_token = NULL,
      locked_until = NULL, finished_at = ${NOW}, updated_at = ${NOW} FROM items i WHERE ${FENCE} RETURNING i.ord) SELECT ord FROM upd`),
  },
  delete: {
    system: 'leasehold-postgres',
    sql: successFinish(`${ITEMS}, del AS (DELETE FROM ${S}.jobs j USING items i WHERE ${FENCE} RETURNING i.ord) SELECT ord FROM del`),
  },
};

const [nArg = '20000', repsArg = '5', ...picked] = process.argv.slice(2);
const n = Number(nArg);
const names = picked.length > 0 ? picked : Object.keys(variants);
for (const v of names) if (!variants[v]) throw new Error(`unknown variant ${v}: ${Object.keys(variants).join(', ')}`);

async function exec(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** One drain of n queued jobs by one worker (c=10) in this process; jobs/s and server µs per job. */
async function drainOnce(v: string): Promise<{ rate: number; server: number }> {
  const { system, sql } = variants[v] as { system: string; sql?: string };
  const sys = findSystem(system);
  await sys.reset();
  if (sql) await exec(sql);
  const p = await sys.producer();
  const payloads = Array.from({ length: n }, (_, i) => ({ i }));
  for (let i = 0; i < n; i += 1000) await p.enqueueBulk(payloads.slice(i, i + 1000));
  await checkpointPostgres();
  let done = 0;
  let resolve!: () => void;
  const all = new Promise<void>((ok) => (resolve = ok));
  const server0 = serverCpuMs();
  const t0 = performance.now();
  const w = await sys.worker({ concurrency: 10, onJob: () => void (++done === n && resolve()) });
  await all;
  while ((await p.remaining()) > 0) await new Promise((ok) => setTimeout(ok, 5));
  const wall = performance.now() - t0;
  const server = Math.round(((serverCpuMs() - server0) * 1000) / n);
  await w.stop();
  await p.close();
  return { rate: Math.round(n / (wall / 1000)), server };
}

const runs = new Map<string, { rate: number; server: number }[]>(names.map((v) => [v, []]));
for (let r = 0; r < Number(repsArg); r++) for (const v of names) runs.get(v)?.push(await drainOnce(v));
for (const id of new Set(names.map((v) => variants[v]?.system as string))) await findSystem(id).cleanup();

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
const graphile = runs.has('graphile') ? median((runs.get('graphile') ?? []).map((x) => x.rate)) : undefined;
for (const [v, rs] of runs) {
  const rate = median(rs.map((x) => x.rate));
  const vs = graphile ? `  ÷ graphile ${(rate / graphile).toFixed(2)}×` : '';
  console.log(`${v.padEnd(11)} ${String(rate).padStart(6)} jobs/s (${rs.map((x) => x.rate).join(' ')}), server ${median(rs.map((x) => x.server))} µs/job${vs}`);
}
process.exit(0);
