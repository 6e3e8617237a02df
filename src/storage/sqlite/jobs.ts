/**
 * Job rows on SQLite: insert (the enqueue hot path), get, list, and an operator's retry, cancel
 * and prune. An insert hands back rows built from its input, never re-read: RETURNING * into an
 * object per row cost more than the insert itself. A run of alike jobs is one statement.
 * A unique key is looked up then written in the insert's IMMEDIATE transaction, which no other
 * connection's write can interleave; the partial unique index on unique_key is the backstop.
 */
import type { InsertResult, JobQuery, JobRow, JobStore, NewJob, PruneParams } from '../../core/storage.js';
import { insertedJobRow } from '../row-mapping.js';
import { ATTEMPT_SQL } from './attempts.js';
import { refuseTx } from './db.js';
import type { SqliteDb } from './db.js';
import { jsonOrNull, NEXT_JOB_ID, toJobRow, toSqlId } from './sql.js';
import type { SqlJob } from './sql.js';

type AdminResult = { job: JobRow | null; applied: boolean };

const JOB_SQL = {
  insertOne: `-- leasehold jobs.insertOne: one job; a duplicate idempotency or unique key inserts nothing (changes = 0)
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
      idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key, unique_key)
    VALUES (${NEXT_JOB_ID}, ?, ?, ?, 'queued', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING`,
  nextJobId: `-- leasehold jobs.nextJobId: the id a run's first job takes, read in the run's write transaction
    SELECT ${NEXT_JOB_ID} AS id`,
  // The first id is a parameter: a subquery on jobs here would make SQLite copy the SELECT's
  // rows to a temporary table before inserting them (it reads the table it writes). The rows
  // after the first take SQLite's own next rowid, one above the largest: the ids that follow,
  // without a uniqueness probe per row (the caller checks the last one).
  insertRun: `-- leasehold jobs.insertRun: a run of alike jobs without idempotency or unique key, one per payload text of the @payloads JSON array, ids @firstId on in array order
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
      timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key)
    SELECT CASE WHEN key = 0 THEN @firstId END, @queue, @type, value, 'queued', @priority, @runAt, 0, @maxAttempts, @timeoutMs, @maxRuntimeMs, @now, @now, @traceContext, @concurrencyKey
    FROM json_each(@payloads) ORDER BY key`,
  byIdempotencyKey: `-- leasehold jobs.byIdempotencyKey: the existing job holding an idempotency key
    SELECT * FROM {p}jobs WHERE idempotency_key = ?`,
  byUniqueKey: `-- leasehold jobs.byUniqueKey: the queued, failed or running job holding a unique key
    SELECT * FROM {p}jobs WHERE unique_key = ? AND status IN ('queued','failed','running')`,
  debounce: `-- leasehold jobs.debounce: a waiting unique-key holder takes the new insert's payload and run_at
    UPDATE {p}jobs SET payload = @payload, run_at = @runAt, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed')
    RETURNING *`,
  releaseUniqueKey: `-- leasehold jobs.releaseUniqueKey: a running holder gives its unique key up to a new job
    UPDATE {p}jobs SET unique_key = NULL WHERE id = ? AND status = 'running'`,
  get: `-- leasehold jobs.get: one job by id
    SELECT * FROM {p}jobs WHERE id = ?`,
  // a unique key another job took meanwhile stays with that job: this one comes back without it
  retry: `-- leasehold jobs.retry: admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
    UPDATE {p}jobs
    SET status = 'queued', run_at = @now, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = @now,
        unique_key = CASE WHEN EXISTS (SELECT 1 FROM {p}jobs h WHERE h.unique_key = {p}jobs.unique_key
          AND h.status IN ('queued','failed','running') AND h.id <> {p}jobs.id) THEN NULL ELSE unique_key END
    WHERE id = @id AND status IN ('queued','failed','dead','cancelled')
    RETURNING *`,
  cancel: `-- leasehold jobs.cancel: admin cancel: queued/failed/running → cancelled, lease cleared
    UPDATE {p}jobs
    SET status = 'cancelled', finished_at = @now, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = @message, updated_at = @now
    WHERE id = @id AND status IN ('queued','failed','running')
    RETURNING *`,
  pruneIds: `-- leasehold jobs.pruneIds: ids of finished jobs past retention, oldest first, at most @limit
    SELECT id FROM {p}jobs
    WHERE finished_at < @cutoff AND status IN (SELECT value FROM json_each(@statuses))
    ORDER BY finished_at, id LIMIT @limit`,
  pruneAttempts: `-- leasehold jobs.pruneAttempts: delete the attempt rows of pruned jobs
    DELETE FROM {p}job_attempts WHERE job_id IN (SELECT value FROM json_each(@ids))`,
  pruneJobs: `-- leasehold jobs.pruneJobs: delete pruned jobs
    DELETE FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids))`,
} as const;

/**
 * jobs.list: only the filters in use go into the WHERE clause, so SQLite can pick an index
 * (`? IS NULL OR col = ?` would defeat it). One statement per filter combination, cached.
 */
function listSql(f: { status: boolean; queue: boolean; type: boolean; beforeId: boolean }): string {
  const where = [
    f.status ? 'status = @status' : null,
    f.queue ? 'queue = @queue' : null,
    f.type ? 'type = @type' : null,
    f.beforeId ? 'id < @beforeId' : null,
  ].filter((x) => x !== null);
  return `-- leasehold jobs.list: jobs matching the filters, newest first, keyset-paginated by id
    SELECT * FROM {p}jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
}

const CANCEL_MESSAGE = 'cancelled by an operator';

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
    x.maxAttempts === y.maxAttempts && x.timeoutMs === y.timeoutMs && x.maxRuntimeMs === y.maxRuntimeMs &&
    x.traceContext === y.traceContext && (x.concurrencyKey ?? null) === (y.concurrencyKey ?? null)
  );
}

/** A job that may go into a run (and, alone, into autocommit): no key to look up first. */
const keyless = (p: Prepared): boolean => p.job.idempotencyKey === null && !p.job.unique;

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
    if (keyless(first)) {
      let chars = first.json.length;
      while (end < prepared.length && end - i < RUN_MAX_ROWS) {
        const next = prepared[end] as Prepared;
        if (!keyless(next) || !alike(first, next) || (chars += next.json.length) > RUN_MAX_CHARS) break;
        end++;
      }
    }
    out.push(prepared.slice(i, end));
    i = end;
  }
  return out;
}

function writeSegment(db: SqliteDb, now: number, seg: Prepared[], out: InsertResult[]): void {
  const first = seg[0] as Prepared;
  const j = first.job;
  if (seg.length > 1) {
    const firstId = (db.stmt(JOB_SQL.nextJobId).get() as { id: number }).id;
    const r = db.stmt(JOB_SQL.insertRun).run({
      firstId,
      queue: j.queue, type: j.type, priority: j.priority, runAt: first.runAt, maxAttempts: j.maxAttempts,
      timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs, now, traceContext: j.traceContext ?? null, concurrencyKey: j.concurrencyKey ?? null,
      payloads: JSON.stringify(seg.map((p) => p.json)),
    });
    if (r.changes !== seg.length || Number(r.lastInsertRowid) !== firstId + seg.length - 1) {
      throw new Error(`sqlite: a run of ${seg.length} ${j.type} jobs from id ${firstId} inserted ${r.changes} rows, the last ${r.lastInsertRowid}`);
    }
    for (let k = 0; k < seg.length; k++) out.push({ job: insertedRow(firstId + k, seg[k] as Prepared, now), created: true, outcome: 'created' });
    return;
  }
  // keys are looked up against existing rows and earlier items of this batch (already written in this transaction)
  const answered = j.idempotencyKey === null ? undefined : (db.stmt(JOB_SQL.byIdempotencyKey).get(j.idempotencyKey) as SqlJob | undefined);
  const result = answered ? { job: toJobRow(answered), created: false, outcome: 'existing' as const } : uniqueAnswer(db, now, first);
  if (result) {
    out.push(result);
    return;
  }
  const r = db.stmt(JOB_SQL.insertOne).run(
    j.queue, j.type, first.json, j.priority, first.runAt, j.maxAttempts, j.idempotencyKey, j.timeoutMs, j.maxRuntimeMs, now, now,
    j.traceContext ?? null, j.concurrencyKey ?? null, j.unique?.key ?? null,
  );
  if (r.changes === 0) throw new Error(`sqlite: insert of a ${j.type} job conflicted but no row holds its key`);
  out.push({ job: insertedRow(Number(r.lastInsertRowid), first, now), created: true, outcome: 'created' });
}

/**
 * The answer of a job whose unique key is held: 'active' returns the holder, 'debounce' gives a
 * waiting holder this payload and run_at. Undefined when the job is to be inserted: no holder,
 * or a running one, which gives its key up first.
 */
function uniqueAnswer(db: SqliteDb, now: number, p: Prepared): InsertResult | undefined {
  const u = p.job.unique;
  if (!u) return undefined;
  const holder = db.stmt(JOB_SQL.byUniqueKey).get(u.key) as SqlJob | undefined;
  if (!holder) return undefined;
  if (u.mode === 'active') return { job: toJobRow(holder), created: false, outcome: 'existing' };
  if (holder.status === 'running') {
    db.stmt(JOB_SQL.releaseUniqueKey).run(holder.id);
    return undefined;
  }
  const row = db.stmt(JOB_SQL.debounce).get({ id: holder.id, payload: p.json, runAt: p.runAt, now }) as SqlJob;
  return { job: toJobRow(row), created: false, outcome: 'replaced' };
}

export class SqliteJobs implements JobStore {
  constructor(private readonly db: SqliteDb) {}

  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    refuseTx(p.tx, 'jobs.insert');
    if (p.jobs.length === 0) return [];
    const db = this.db;
    const now = db.now();
    const prepared = p.jobs.map((job): Prepared => ({
      job,
      json: jsonOrNull(job.payload) ?? 'null',
      runAt: job.runAt ? job.runAt.getTime() : now + job.runAfterMs,
    }));
    const segs = segments(prepared);
    const out: InsertResult[] = [];
    const writeAll = () => {
      for (const seg of segs) writeSegment(db, now, seg, out);
      return out;
    };
    // one unkeyed job is one statement, atomic by itself; a key lookup + insert, a run (its first
    // id is read first) or several statements need one IMMEDIATE transaction
    const lone = prepared.length === 1 && keyless(prepared[0] as Prepared);
    return lone ? db.read(writeAll) : db.write(writeAll);
  }

  async get(p: { id: string }): Promise<JobRow | null> {
    const id = toSqlId(p.id);
    if (id === null) return null;
    const row = this.db.read(() => this.db.stmt(JOB_SQL.get).get(id) as SqlJob | undefined);
    return row ? toJobRow(row) : null;
  }

  async list(q: JobQuery): Promise<JobRow[]> {
    let beforeId: number | null = null;
    if (q.beforeId !== undefined) {
      beforeId = toSqlId(q.beforeId);
      if (beforeId === null) return [];
    }
    const sql = listSql({ status: !!q.status, queue: q.queue !== undefined, type: q.type !== undefined, beforeId: beforeId !== null });
    const params: Record<string, unknown> = { limit: q.limit };
    if (q.status) params.status = q.status;
    if (q.queue !== undefined) params.queue = q.queue;
    if (q.type !== undefined) params.type = q.type;
    if (beforeId !== null) params.beforeId = beforeId;
    return this.db.read(() => this.db.stmt(sql).all(params) as SqlJob[]).map(toJobRow);
  }

  async retry(p: { id: string }): Promise<AdminResult> {
    return this.#admin(p.id, (db, id, now) => {
      const row = db.stmt(JOB_SQL.retry).get({ id, now }) as SqlJob | undefined;
      if (row) return { job: toJobRow(row), applied: true };
      const cur = db.stmt(JOB_SQL.get).get(id) as SqlJob | undefined;
      return { job: cur ? toJobRow(cur) : null, applied: false };
    });
  }

  /** A running job's attempt ends as cancelled: its history row is written from the job row as it was, fenced by the lease just read. */
  async cancel(p: { id: string }): Promise<AdminResult> {
    return this.#admin(p.id, (db, id, now) => {
      const before = db.stmt(JOB_SQL.get).get(id) as SqlJob | undefined;
      if (!before) return { job: null, applied: false };
      if (before.status === 'running' && before.lease_token !== null) {
        db.stmt(ATTEMPT_SQL.end).run(now, now, 'cancelled', 'CANCELLED', CANCEL_MESSAGE, null, null, id, before.lease_token, 0, now);
      }
      const row = db.stmt(JOB_SQL.cancel).get({ id, now, message: CANCEL_MESSAGE }) as SqlJob | undefined;
      return row ? { job: toJobRow(row), applied: true } : { job: toJobRow(before), applied: false };
    });
  }

  /** An operator's action on one job, in one write transaction; an id that cannot exist finds nothing. */
  #admin(rawId: string, act: (db: SqliteDb, id: number, now: number) => AdminResult): AdminResult {
    const id = toSqlId(rawId);
    if (id === null) return { job: null, applied: false };
    const db = this.db;
    const now = db.now();
    return db.write(() => act(db, id, now));
  }

  async prune(p: PruneParams): Promise<number> {
    if (p.statuses.length === 0 || p.limit <= 0) return 0;
    const db = this.db;
    const cutoff = db.now() - p.olderThanMs;
    return db.write(() => {
      const ids = (db.stmt(JOB_SQL.pruneIds).all({ cutoff, statuses: JSON.stringify(p.statuses), limit: p.limit }) as { id: number }[]).map((r) => r.id);
      if (ids.length === 0) return 0;
      const json = JSON.stringify(ids);
      db.stmt(JOB_SQL.pruneAttempts).run({ ids: json });
      return db.stmt(JOB_SQL.pruneJobs).run({ ids: json }).changes;
    });
  }
}
