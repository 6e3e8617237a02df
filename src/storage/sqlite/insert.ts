/**
 * Enqueues on SQLite: the jobs.insert hot path, on our connection or on the caller's. An insert
 * hands back rows built from its input, never re-read: RETURNING * into an object per row cost
 * more than the insert itself. A run of alike jobs is one statement. A unique key is looked up
 * then written in the insert's IMMEDIATE transaction, which no other connection's write can
 * interleave; the partial unique index on unique_key is the backstop. On the caller's handle the
 * same statements run inside the caller's own open transaction, which holds the write lock the
 * same way once it writes.
 */
import type { InsertResult, JobRow, NewJob } from '../../core/storage.js';
import { insertedJobRow } from '../row-mapping.js';
import type { SqliteDb, Statements } from './db.js';
import { jsonOrNull, NEXT_JOB_ID, toJobRow } from './sql.js';
import type { SqlJob } from './sql.js';

const INSERT_SQL = {
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
} as const;

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

function writeSegment(db: Statements, now: number, seg: Prepared[], out: InsertResult[]): void {
  const first = seg[0] as Prepared;
  const j = first.job;
  if (seg.length > 1) {
    const firstId = (db.stmt(INSERT_SQL.nextJobId).get() as { id: number }).id;
    const r = db.stmt(INSERT_SQL.insertRun).run({
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
  const answered = j.idempotencyKey === null ? undefined : (db.stmt(INSERT_SQL.byIdempotencyKey).get(j.idempotencyKey) as SqlJob | undefined);
  const result = answered ? { job: toJobRow(answered), created: false, outcome: 'existing' as const } : uniqueAnswer(db, now, first);
  if (result) {
    out.push(result);
    return;
  }
  const r = db.stmt(INSERT_SQL.insertOne).run(
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
function uniqueAnswer(db: Statements, now: number, p: Prepared): InsertResult | undefined {
  const u = p.job.unique;
  if (!u) return undefined;
  const holder = db.stmt(INSERT_SQL.byUniqueKey).get(u.key) as SqlJob | undefined;
  if (!holder) return undefined;
  if (u.mode === 'active') return { job: toJobRow(holder), created: false, outcome: 'existing' };
  if (holder.status === 'running') {
    db.stmt(INSERT_SQL.releaseUniqueKey).run(holder.id);
    return undefined;
  }
  const row = db.stmt(INSERT_SQL.debounce).get({ id: holder.id, payload: p.json, runAt: p.runAt, now }) as SqlJob;
  return { job: toJobRow(row), created: false, outcome: 'replaced' };
}

/** The jobs as rows to write: payload text and absolute run_at computed once. */
function prepare(jobs: readonly NewJob[], now: number): Prepared[] {
  return jobs.map((job): Prepared => ({ job, json: jsonOrNull(job.payload) ?? 'null', runAt: job.runAt ? job.runAt.getTime() : now + job.runAfterMs }));
}

/** jobs.insert on our connection, in input order. */
export function insertJobs(db: SqliteDb, jobs: readonly NewJob[]): InsertResult[] {
  if (jobs.length === 0) return [];
  const now = db.now();
  const prepared = prepare(jobs, now);
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

/** jobs.insert on the caller's handle, inside their open transaction (they commit or roll back); `now` is the storage's clock. */
export function insertJobsOn(on: Statements, now: number, jobs: readonly NewJob[]): InsertResult[] {
  const out: InsertResult[] = [];
  for (const seg of segments(prepare(jobs, now))) writeSegment(on, now, seg, out);
  return out;
}
