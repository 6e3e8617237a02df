/**
 * Enqueueing on PostgreSQL: which insert statement a batch takes, and the rows it hands back.
 *
 * - one job without an idempotency key: `insertOne`, scalar parameters;
 * - a run of alike jobs (the usual bulk enqueue: same type, queue, timing, limits; no keys):
 *   `insertRun`, the shared values once and the payloads as one JSON array text, built by
 *   joining the payload texts (no per-element escaping on the client, no nine arrays to encode
 *   and unnest on the server), the ids back as one array;
 * - any other batch without keys: `insertPlain` (arrays, one per column);
 * - a batch with idempotency keys: `insert` (duplicates skipped), then the holders of the
 *   skipped keys are read back.
 * Rows are built from what the caller passed plus what the database chose (id, run_at,
 * created_at), never read back whole.
 */
import { TransientStorageError } from '../../core/errors.js';
import type { InsertResult, JobRow, NewJob } from '../../core/storage.js';
import { alikeButPayload, insertedJobRow } from '../row-mapping.js';
import type { Prepared } from './postgres-db.js';
import { jsonParam, toJobRow, type Queryable, type Row } from './postgres-rows.js';
import type { insertSql } from './postgres-sql-insert.js';

export interface InsertContext {
  run(what: string, text: string | Prepared, params: unknown[], on?: Queryable): Promise<Row[]>;
  sql: ReturnType<typeof insertSql>;
  hot: { insertOne: Prepared; insertRun: Prepared; insertPlain: Prepared };
  /** NOTIFY channel and payload (the schema) for the wake-up of due jobs */
  notify: [string, string];
}

export async function insertJobs(ctx: InsertContext, jobs: readonly NewJob[], on: Queryable | undefined): Promise<InsertResult[]> {
  if (jobs.length === 0) return [];
  if (jobs.every((j) => j.idempotencyKey === null)) {
    const payloads = jobs.map((j) => jsonParam(j.payload));
    if (jobs.length === 1) return insertOne(ctx, jobs[0] as NewJob, payloads[0] as string, on);
    if (jobs.every((j) => alikeButPayload(jobs[0] as NewJob, j))) return insertRun(ctx, jobs, payloads, on);
    return insertPlain(ctx, jobs, payloads, on);
  }
  return insertKeyed(ctx, jobs, on);
}

/** The row handed back for input `j`: what the database chose, the payload as its text reads back. */
function inserted(j: NewJob, payload: string, id: string, runAt: Date, createdAt: Date): InsertResult {
  return { job: insertedJobRow(j, { id, runAt, createdAt, payload: JSON.parse(payload) as unknown }), created: true };
}

async function insertOne(ctx: InsertContext, j: NewJob, payload: string, on: Queryable | undefined): Promise<InsertResult[]> {
  const [r] = await ctx.run('insertJobs', ctx.hot.insertOne, [
    j.queue, j.type, payload, j.priority, j.runAt ?? null, j.runAfterMs, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, ...ctx.notify,
  ], on);
  if (!r) throw new Error('postgres insertJobs: no row back for one job');
  return [inserted(j, payload, String(r.id), r.run_at as Date, r.created_at as Date)];
}

async function insertRun(ctx: InsertContext, jobs: readonly NewJob[], payloads: string[], on: Queryable | undefined): Promise<InsertResult[]> {
  const j = jobs[0] as NewJob;
  // each payload text is JSON already: joined, they are a JSON array
  const [r] = await ctx.run('insertJobs', ctx.hot.insertRun, [
    j.queue, j.type, `[${payloads.join(',')}]`, j.priority, j.runAt ?? null, j.runAfterMs, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, ...ctx.notify,
  ], on);
  const ids = typeof r?.ids === 'string' ? r.ids.split(',') : [];
  if (ids.length !== jobs.length) throw new Error(`postgres insertJobs: ${ids.length} ids back for ${jobs.length} jobs`);
  const runAt = r?.run_at as Date;
  const createdAt = r?.created_at as Date;
  // each row its own Date objects, as rows read back have
  return jobs.map((x, i) => inserted(x, payloads[i] as string, ids[i] as string, new Date(runAt.getTime()), new Date(createdAt.getTime())));
}

async function insertPlain(ctx: InsertContext, jobs: readonly NewJob[], payloads: string[], on: Queryable | undefined): Promise<InsertResult[]> {
  const rows = await ctx.run('insertJobs', ctx.hot.insertPlain, [
    jobs.map((j) => j.queue), jobs.map((j) => j.type), payloads, jobs.map((j) => j.priority),
    jobs.map((j) => j.runAt ?? null), jobs.map((j) => j.runAfterMs), jobs.map((j) => j.maxAttempts),
    jobs.map((j) => j.timeoutMs), jobs.map((j) => j.maxRuntimeMs), ...ctx.notify,
  ], on);
  if (rows.length !== jobs.length) throw new Error(`postgres insertJobs: ${rows.length} rows back for ${jobs.length} jobs`);
  return rows.map((r, i) => inserted(jobs[i] as NewJob, payloads[i] as string, String(r.id), r.run_at as Date, r.created_at as Date));
}

async function insertKeyed(ctx: InsertContext, jobs: readonly NewJob[], on: Queryable | undefined): Promise<InsertResult[]> {
  const rows = await ctx.run('insertJobs', ctx.sql.insert, [
    jobs.map((j) => j.queue), jobs.map((j) => j.type), jobs.map((j) => jsonParam(j.payload)),
    jobs.map((j) => j.priority), jobs.map((j) => j.runAt ?? null), jobs.map((j) => j.runAfterMs),
    jobs.map((j) => j.maxAttempts), jobs.map((j) => j.idempotencyKey), jobs.map((j) => j.timeoutMs),
    jobs.map((j) => j.maxRuntimeMs), ...ctx.notify,
  ], on);
  const out: (InsertResult | undefined)[] = rows.map((r) => (r.id == null ? undefined : { job: toJobRow(r), created: true }));
  const missing = [...new Set(jobs.flatMap((j, i) => (out[i] ? [] : [j.idempotencyKey as string])))];
  if (missing.length > 0) {
    const existing = new Map<string, JobRow>();
    for (const r of await ctx.run('insertJobs', ctx.sql.byIdempotencyKeys, [missing], on)) {
      existing.set(String(r.idempotency_key), toJobRow(r));
    }
    jobs.forEach((j, i) => {
      if (out[i]) return;
      const job = existing.get(j.idempotencyKey as string);
      // The conflicting row was deleted between the two statements (pruned): say "try again".
      if (!job) throw new TransientStorageError(`postgres: job with idempotency key "${j.idempotencyKey}" vanished during insert; retry`);
      out[i] = { job, created: false };
    });
  }
  return out as InsertResult[];
}
