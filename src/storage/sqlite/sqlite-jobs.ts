/**
 * The SQLite hot path: insert, claim, heartbeat and finish. Plain functions over a connection
 * and a "now" (the process clock, see sqlite-storage.ts); SqliteStorage delegates.
 *
 * Why it is shaped this way (measured on 20,000-job drains and 1,000-job enqueues):
 * - a batch is one statement where that pays: a run of alike jobs inserts from one JSON array of
 *   payload texts; a claim is one UPDATE … RETURNING. Finishes and heartbeats stay cached
 *   statements per item in one transaction: measured, that beat one UPDATE … FROM json_each per
 *   batch (see JOB_SQL.finish).
 * - a claim writes no attempt row (schema 3): the job row holds the running attempt until the
 *   finish (or rescue, hand-back, cancel) that ends it inserts its history row, once; listAttempts
 *   reads a running attempt from the job row. One row written per attempt instead of an insert at
 *   claim time and an update of it at the end.
 * - rows handed back are built from what the caller passed plus what the statement returned,
 *   never re-read: RETURNING * into an object per row cost more than the insert itself.
 * - a lone statement runs in autocommit, without BEGIN/COMMIT: it is atomic on its own.
 */
import type { JobStatus } from '../../core/status.js';
import type { ClaimedJob, ClaimParams, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobRow, NewJob } from '../../core/storage.js';
import type { SqliteDb } from './sqlite-db.js';
import { insertedJobRow } from '../row-mapping.js';
import { jsonOrNull, toJobRow, toSqlId } from './sqlite-rows.js';
import type { SqlJob } from './sqlite-rows.js';
import { claimSql, JOB_SQL } from './sqlite-sql.js';

// --- insert ---------------------------------------------------------------------------------

/** Rows per insertRun statement, and payload text per statement: keeps one bound string modest. */
const RUN_MAX_ROWS = 1000;
const RUN_MAX_CHARS = 4 << 20;

/** A job ready to write: its payload text and absolute run_at, computed once. */
interface Prepared {
  job: NewJob;
  json: string;
  runAt: number;
}

/** Jobs that can share one insertRun: everything but the payload is the same. */
function alike(a: Prepared, b: Prepared): boolean {
  const x = a.job;
  const y = b.job;
  return (
    a.runAt === b.runAt && x.type === y.type && x.queue === y.queue && x.priority === y.priority &&
    x.maxAttempts === y.maxAttempts && x.timeoutMs === y.timeoutMs && x.maxRuntimeMs === y.maxRuntimeMs
  );
}

/** The stored row of a job this call inserted, built without reading it back. */
function insertedRow(id: number, p: Prepared, now: number): JobRow {
  // parsed from the stored text: the caller gets what a read would give, not its own object
  return insertedJobRow(p.job, { id: String(id), runAt: new Date(p.runAt), createdAt: new Date(now), payload: JSON.parse(p.json) as unknown });
}

/**
 * Split into segments written in input order (so ids increase in input order): runs of alike
 * unkeyed jobs (one statement each) and single jobs (keyed ones, or a run of one).
 */
function segments(prepared: Prepared[]): Prepared[][] {
  const out: Prepared[][] = [];
  let i = 0;
  while (i < prepared.length) {
    const first = prepared[i] as Prepared;
    let end = i + 1;
    if (first.job.idempotencyKey === null) {
      let chars = first.json.length;
      while (end < prepared.length && end - i < RUN_MAX_ROWS) {
        const next = prepared[end] as Prepared;
        if (next.job.idempotencyKey !== null || !alike(first, next) || (chars += next.json.length) > RUN_MAX_CHARS) break;
        end++;
      }
    }
    out.push(prepared.slice(i, end));
    i = end;
  }
  return out;
}

function writeSegment(c: SqliteDb, now: number, seg: Prepared[], out: InsertResult[]): void {
  const first = seg[0] as Prepared;
  const j = first.job;
  if (seg.length > 1) {
    const firstId = (c.stmt(JOB_SQL.nextJobId).get() as { id: number }).id;
    const r = c.stmt(JOB_SQL.insertRun).run({
      firstId,
      queue: j.queue, type: j.type, priority: j.priority, runAt: first.runAt, maxAttempts: j.maxAttempts,
      timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs, now, payloads: JSON.stringify(seg.map((p) => p.json)),
    });
    if (r.changes !== seg.length || Number(r.lastInsertRowid) !== firstId + seg.length - 1) {
      throw new Error(`sqlite: a run of ${seg.length} ${j.type} jobs from id ${firstId} inserted ${r.changes} rows, the last ${r.lastInsertRowid}`);
    }
    for (let k = 0; k < seg.length; k++) out.push({ job: insertedRow(firstId + k, seg[k] as Prepared, now), created: true });
    return;
  }
  if (j.idempotencyKey !== null) {
    // against existing rows and earlier items of this batch (already written in this transaction)
    const existing = c.stmt(JOB_SQL.byIdempotencyKey).get(j.idempotencyKey) as SqlJob | undefined;
    if (existing) {
      out.push({ job: toJobRow(existing), created: false });
      return;
    }
  }
  const r = c.stmt(JOB_SQL.insertOne).run(
    j.queue, j.type, first.json, j.priority, first.runAt, j.maxAttempts, j.idempotencyKey, j.timeoutMs, j.maxRuntimeMs, now, now,
  );
  if (r.changes === 0) throw new Error(`sqlite: insert of a ${j.type} job conflicted but no row holds its key`);
  out.push({ job: insertedRow(Number(r.lastInsertRowid), first, now), created: true });
}

export function insertJobs(c: SqliteDb, now: number, jobs: readonly NewJob[]): InsertResult[] {
  const prepared = jobs.map((job): Prepared => ({
    job,
    json: jsonOrNull(job.payload) ?? 'null',
    runAt: job.runAt ? job.runAt.getTime() : now + job.runAfterMs,
  }));
  const segs = segments(prepared);
  const out: InsertResult[] = [];
  const writeAll = () => {
    for (const seg of segs) writeSegment(c, now, seg, out);
    return out;
  };
  // one unkeyed job is one statement, atomic by itself; a key lookup + insert, a run (its first
  // id is read first) or several statements need one IMMEDIATE transaction
  const lone = prepared.length === 1 && prepared[0]?.job.idempotencyKey === null;
  return lone ? c.read(writeAll) : c.write(writeAll);
}

// --- claim ----------------------------------------------------------------------------------

/** RETURNING columns of claimSql, in order. */
type ClaimRow = [
  id: number, queue: string, type: string, payload: string, priority: number, runAt: number, attempts: number,
  maxAttempts: number, idempotencyKey: string | null, finishedAt: number | null, lastErrorCode: string | null,
  lastError: string | null, timeoutMs: number, maxRuntimeMs: number, createdAt: number,
  scheduleName: string | null, slotAt: number | null, leaseToken: string,
];

function claimedJob(r: ClaimRow, p: ClaimParams, now: number): ClaimedJob {
  const job: ClaimedJob = {
    id: String(r[0]),
    queue: r[1],
    type: r[2],
    payload: JSON.parse(r[3]),
    status: 'running',
    priority: r[4],
    runAt: new Date(r[5]),
    attempts: r[6],
    maxAttempts: r[7],
    idempotencyKey: r[8],
    lockedBy: p.workerId,
    leaseToken: r[17],
    lockedUntil: new Date(now + p.leaseMs),
    heartbeatAt: new Date(now),
    startedAt: new Date(now),
    finishedAt: r[9] === null ? null : new Date(r[9]),
    lastErrorCode: r[10],
    lastError: r[11],
    timeoutMs: r[12],
    maxRuntimeMs: r[13],
    createdAt: new Date(r[14]),
    updatedAt: new Date(now),
  };
  // only jobs a schedule enqueued carry their slot
  if (r[15] !== null && r[16] !== null) {
    job.scheduleName = r[15];
    job.slotAt = new Date(r[16]);
  }
  return job;
}

export function claimJobs(c: SqliteDb, now: number, p: ClaimParams): ClaimedJob[] {
  const byQueue = p.queues !== null;
  const sql = claimSql(byQueue);
  // one statement, atomic on its own: autocommit (its write lock is taken at its start)
  const rows = c.read(() => c.stmt(sql, 'raw').all({
    now, workerId: p.workerId, leaseMs: p.leaseMs, limit: p.limit, types: JSON.stringify(p.types),
    ...(byQueue ? { queues: JSON.stringify(p.queues) } : {}),
  }) as ClaimRow[]);
  // RETURNING order is unspecified; hand jobs out in claim order (priority, run_at, id)
  rows.sort((a, b) => a[4] - b[4] || a[5] - b[5] || a[0] - b[0]);
  return rows.map((r) => claimedJob(r, p, now));
}

// --- heartbeat ------------------------------------------------------------------------------

export function heartbeat(c: SqliteDb, now: number, p: HeartbeatParams): HeartbeatResult {
  const until = now + p.leaseMs;
  return c.write(() => {
    const extend = c.stmt(JOB_SQL.heartbeat);
    const lost: HeartbeatResult['lost'] = [];
    for (const l of p.leases) {
      const id = toSqlId(l.id);
      if (id === null) lost.push({ id: l.id, status: null });
      else if (extend.run(until, now, now, id, l.leaseToken).changes === 0) lost.push({ id: l.id, status: statusOf(c, id) });
    }
    return { lost };
  });
}

function statusOf(c: SqliteDb, id: number): JobStatus | null {
  const r = c.stmt(JOB_SQL.status).get(id) as { status: JobStatus } | undefined;
  return r ? r.status : null;
}

// --- finish ---------------------------------------------------------------------------------

const TERMINAL: ReadonlySet<string> = new Set(['succeeded', 'dead', 'cancelled']);

/**
 * Item by item in input order (see JOB_SQL.finish for why not one statement per batch). The
 * attempt's history row first, read from the job row under the same fence (JOB_SQL.endAttempt:
 * the finish clears locked_by), then the job row; the finish's count says whether the item
 * landed. Same fence, same transaction: the row is written exactly when the finish lands.
 */
export function finishJobs(c: SqliteDb, now: number, params: readonly FinishParams[]): FinishResult[] {
  return c.write(() => {
    const end = c.stmt(JOB_SQL.endAttempt);
    const finish = c.stmt(JOB_SQL.finish);
    return params.map((f): FinishResult => {
      const id = toSqlId(f.id);
      if (id === null) return { id: f.id, applied: false };
      const expiredOnly = f.onlyIfExpired ? 1 : 0;
      const a = f.attempt.error ?? null;
      end.run(now, now, f.attempt.outcome, a?.code ?? null, a?.message ?? null, a?.stack ?? null, f.attempt.retryDelayMs ?? null, id, f.leaseToken, expiredOnly, now);
      const e = f.error ?? null;
      const hasError = e === null ? 0 : 1;
      const landed = finish.run(
        f.status, now, f.runAfterMs ?? null, f.uncountAttempt ? 1 : 0, hasError, e?.code ?? null, hasError, e?.message ?? null,
        TERMINAL.has(f.status) ? now : null, now, id, f.leaseToken, expiredOnly, now,
      ).changes;
      return { id: f.id, applied: landed > 0 };
    });
  });
}
