/**
 * Fenced finishes on MySQL/MariaDB (leases.ts sends them): each landing item ends its job's
 * running attempt and writes its history row; parents settle their children and members their
 * batches (workflows.ts). A finish that makes jobs due again (a retry due now, a job handed
 * back, children released, a batch's callback) says so, and its caller wakes parked workers.
 *
 * 1. finishLock: the batch's jobs locked in id order; the read says which items land (the first
 *    item per job whose lease matches; later items see the job finished) and the running attempt.
 * 2. The job rows: the GROUPED largest groups of items ending the same way get a plain UPDATE
 *    each; the rest share one UPDATE joined to a JSON_TABLE (MariaDB buffers a multi-table
 *    update's rows: dearer per row). 3. One INSERT of the landed attempts' history rows.
 *    2 and 3 go out with COMMIT: with BEGIN riding on 1, a batch is two round trips.
 */
import type { FinishParams, FinishResult } from '../../core/storage.js';
import { type Queryable, type ResultHeader, type Stmt, run, runLast } from './db.js';
import { NOW, type Tables, idParam, micros, parseUtc, sharedSql, waitMs } from './sql.js';
import { resultsStatement, settleBatches, settleChildren, workflowsSql } from './workflows.js';

/** Finishes ending in different ways, one JSON object per item (jsonBatch); absent keys read as NULL. */
const FINISH_ITEMS = `JSON_TABLE(?, '$[*]' COLUMNS (
    id BIGINT UNSIGNED PATH '$.i', token VARCHAR(64) PATH '$.t', status VARCHAR(16) PATH '$.s', terminal INT PATH '$.f',
    expired_only INT PATH '$.x', run_after BIGINT PATH '$.r', uncount INT PATH '$.u', has_error INT PATH '$.e',
    error_code TEXT PATH '$.ec', error_message TEXT PATH '$.em')) AS v`;

export function finishSql(t: Tables) {
  return {
    insertAttempts: sharedSql(t).insertAttempts,
    // in id order (the JSON array's, sorted), as every finisher locks them (no deadlock between
    // batches); by primary key, as MariaDB turns an IN of 1000+ ids into a join that locks every
    // row it scans; `db_now` is the finish's time, written as the job's and the attempt's finished_at
    finishLock: `-- leasehold finishJobs: lock the batch's jobs in id order and read their lease and running attempt
      SELECT j.id, j.lease_token, j.status, j.locked_until < ${NOW} AS expired, j.locked_by, j.attempts, j.started_at, j.run_at, j.dependents, j.batch_id, ${NOW} AS db_now
      FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) AS v STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id FOR UPDATE`,
    finishGroup: `-- leasehold finishJobs: fenced finish of jobs ending the same way (id + lease_token + running), at the finish's now
      UPDATE ${t.jobs} FORCE INDEX (PRIMARY) SET status = ?, locked_by = NULL, lease_token = NULL, locked_until = NULL,
        finished_at = IF(? = 1, CAST(? AS DATETIME(6)), NULL), updated_at = CAST(? AS DATETIME(6)),
        run_at = COALESCE(CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, run_at),
        attempts = IF(? = 1, GREATEST(attempts - 1, 0), attempts),
        last_error_code = IF(? = 1, ?, last_error_code), last_error = IF(? = 1, ?, last_error)
      WHERE id IN (?) AND (id, lease_token) IN (?) AND status = 'running' AND (? = 0 OR locked_until < ${NOW})`,
    finishJobs: `-- leasehold finishJobs: fenced finish of jobs ending in different ways (id + lease_token + running), at the finish's now
      UPDATE ${FINISH_ITEMS} STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.status = v.status, j.locked_by = NULL, j.lease_token = NULL, j.locked_until = NULL,
        j.finished_at = IF(v.terminal = 1, CAST(? AS DATETIME(6)), NULL), j.updated_at = CAST(? AS DATETIME(6)),
        j.run_at = IF(v.run_after IS NULL, j.run_at, CAST(? AS DATETIME(6)) + INTERVAL v.run_after MICROSECOND),
        j.attempts = IF(v.uncount = 1, GREATEST(j.attempts - 1, 0), j.attempts),
        j.last_error_code = IF(v.has_error = 1, v.error_code, j.last_error_code),
        j.last_error = IF(v.has_error = 1, v.error_message, j.last_error)
      WHERE CAST(j.lease_token AS BINARY) = CAST(v.token AS BINARY) AND j.status = 'running' AND (v.expired_only = 0 OR j.locked_until < ${NOW})`,
    workflows: workflowsSql(t),
  };
}

type FinishSql = ReturnType<typeof finishSql>;

/** Ids are BIGINT UNSIGNED, lease_token VARCHAR(64): beyond those, an item names no lease. */
const MAX_ID = 2n ** 64n - 1n;
const MAX_TOKEN = 64;
const GROUPED = 2;

/** A landing item: status, terminal, expired-only, run-after µs, uncount, has-error, error code, message; then the attempt's outcome, error code, message, stack, retry delay. */
interface Landing {
  index: number;
  id: bigint;
  token: string;
  job: [string, 0 | 1, 0 | 1, number | null, 0 | 1, 0 | 1, string | null, string | null];
  attempt: [string, string | null, string | null, string | null, number | null];
  /** attempt number, worker, started_at (the DATETIME(6) text as read: exact to the µs), wait ms, once the lock read let it through */
  running?: [number, string, string, number];
}

function landingOf(index: number, id: bigint, f: FinishParams): Landing {
  const err = f.attempt.error ?? null;
  const terminal = f.status === 'succeeded' || f.status === 'dead' || f.status === 'cancelled';
  const runAfter = f.runAfterMs !== undefined && f.runAfterMs !== null ? micros(f.runAfterMs) : null;
  return {
    index, id, token: f.leaseToken,
    job: [f.status, terminal ? 1 : 0, f.onlyIfExpired === true ? 1 : 0, runAfter, f.uncountAttempt ? 1 : 0, f.error ? 1 : 0, f.error?.code ?? null, f.error?.message ?? null],
    attempt: [f.attempt.outcome, err?.code ?? null, err?.message ?? null, err?.stack ?? null, f.attempt.retryDelayMs ?? null],
  };
}

/** What a finish did: results in input order, and whether it made jobs due now. */
export interface Finished { results: FinishResult[]; due: boolean }

/** Fenced finishes on `c` (inside a transaction). */
export async function finishOn(c: Queryable, sql: FinishSql, items: readonly FinishParams[]): Promise<Finished> {
  const results: FinishResult[] = items.map((f) => ({ id: f.id, applied: false }));
  const none = { results, due: false };
  const candidates = items.flatMap((f, i) => {
    const id = idParam(f.id);
    return id !== null && id <= MAX_ID && f.leaseToken.length <= MAX_TOKEN ? [landingOf(i, id, f)] : [];
  });
  if (candidates.length === 0) return none;
  const ids = [...new Set(candidates.map((l) => l.id))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const rows = await run(c, sql.finishLock, [JSON.stringify(ids.map(String))]);
  const state = new Map(rows.map((r) => [BigInt(String(r.id)), r]));
  const parents: { id: bigint; status: FinishParams['status'] }[] = [];
  const members: { batchId: bigint; status: FinishParams['status'] }[] = [];
  const landing = candidates.filter((l) => {
    const r = state.get(l.id);
    if (!r || r.status !== 'running' || r.lease_token !== l.token) return false;
    if (items[l.index]!.onlyIfExpired === true && Number(r.expired) !== 1) return false;
    state.delete(l.id);
    l.running = [Number(r.attempts), String(r.locked_by), String(r.started_at), waitMs(r.run_at, r.started_at)];
    if (r.dependents !== null) parents.push({ id: l.id, status: items[l.index]!.status });
    if (r.batch_id !== null) members.push({ batchId: BigInt(String(r.batch_id)), status: items[l.index]!.status });
    return true;
  });
  if (landing.length === 0) return none;
  const now = String(rows[0]!.db_now);
  const jobStmts = jobStatements(sql, landing, now);
  const landed = landing.map((l) => ({ id: l.id, result: items[l.index]!.result }));
  const settled = parents.length > 0 ? await settleChildren(c, sql.workflows, parents, now, (batchId) => members.push({ batchId, status: 'cancelled' })) : [];
  if (members.length > 0) settled.push(...(await settleBatches(c, sql.workflows, members, now)));
  const done = await runLast(c, [...jobStmts, attemptStatement(sql, landing, now), ...resultsStatement(sql.workflows, landed), ...settled]);
  const finished = done.slice(0, jobStmts.length).reduce((n: number, r) => n + (r as ResultHeader).affectedRows, 0);
  // the rows were locked by the lock read, so the fenced UPDATEs land exactly the items it chose
  if (finished !== landing.length) throw new Error(`mysql finishJobs: ${finished} of ${landing.length} locked jobs finished`);
  for (const l of landing) results[l.index]!.applied = true;
  return { results, due: landing.some((l) => dueAgain(l.job)) || settled.some((st) => makesDue(sql.workflows, st)) };
}

/** A landed item leaves its job due now: back to queued or failed with no delay (no run-after keeps the run_at it was claimed at). */
function dueAgain([status, , , runAfter]: Landing['job']): boolean {
  return (status === 'queued' || status === 'failed') && (runAfter === null || runAfter <= 0);
}

/** A settling write (workflows.ts) that may make a job due: a child left with no parents to wait for, or a batch's callback. */
export function makesDue(wf: { release: string; fire: string }, st: Stmt): boolean {
  return (st.sql === wf.release && Number(st.values?.[0]) <= 0) || st.sql === wf.fire;
}

/** Step 2: the job rows' UPDATEs, at the finish's `now`. */
function jobStatements(sql: FinishSql, landing: readonly Landing[], now: string): Stmt[] {
  const byJob = new Map<string, Landing[]>();
  for (const l of landing) {
    const k = JSON.stringify(l.job);
    const g = byJob.get(k);
    if (g) g.push(l);
    else byJob.set(k, [l]);
  }
  const groups = [...byJob.values()].sort((a, b) => b.length - a.length);
  const stmts: Stmt[] = groups.slice(0, GROUPED).map((g) => {
    const [s, f, x, r, u, e, ec, em] = g[0]!.job;
    return { sql: sql.finishGroup, values: [s, f, now, now, now, r, u, e, ec, e, em, g.map((l) => l.id), g.map((l) => [l.id, l.token]), x] };
  });
  const rest = groups.slice(GROUPED).flat();
  const json = rest.map(({ id, token, job: [s, f, x, r, u, e, ec, em] }) => ({ i: String(id), t: token, s, f, x, r: r ?? undefined, u, e, ec: ec ?? undefined, em: em ?? undefined }));
  if (rest.length > 0) stmts.push({ sql: sql.finishJobs, values: [JSON.stringify(json), now, now, now] });
  return stmts;
}

/** Step 3: the attempt rows' INSERT, one per landed item; whole ms between the ms-truncated times, as `finishedAt - startedAt` of the Dates read back. */
function attemptStatement(sql: FinishSql, landed: readonly Landing[], now: string): Stmt {
  const endMs = parseUtc(now).getTime();
  return {
    sql: sql.insertAttempts(landed.length),
    values: landed.flatMap(({ id, token, running, attempt }) => {
      const [n, worker, startedAt, wait] = running!;
      return [id, n, worker, token, startedAt, now, endMs - parseUtc(startedAt).getTime(), ...attempt, wait];
    }),
  };
}
