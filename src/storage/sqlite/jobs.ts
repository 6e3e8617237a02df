/**
 * Job rows on SQLite: insert (the enqueue hot path), get, list, and an operator's retry, cancel
 * (operator.ts), prune, history (events.ts) and bulk actions (bulk.ts). An insert hands back rows built from its input, never re-read: RETURNING * into an
 * object per row cost more than the insert itself. A run of alike jobs is one statement.
 * A unique key is looked up then written in the insert's IMMEDIATE transaction, which no other
 * connection's write can interleave; the partial unique index on unique_key is the backstop.
 */
import { checkOperator } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange, InsertResult, JobEvent, JobQuery, JobRow, JobStore, NewJob, OperatorChange, PruneParams } from '../../core/storage.js';
import { insertedJobRow } from '../row-mapping.js';
import { SqliteBulk } from './bulk.js';
import { refuseTx } from './db.js';
import { SqliteEvents } from './events.js';
import { type AdminResult, cancelRow, deleteJobs, retryRow } from './operator.js';
import type { SqliteDb } from './db.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from '../../core/search.js';
import { matchCount, searchPage } from '../search-pages.js';
import { SqliteMatchReader } from './search.js';
import { jsonOrNull, NEXT_JOB_ID, toJobRow, toSqlId } from './sql.js';
import type { SqlJob } from './sql.js';

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
  pruneIds: `-- leasehold jobs.pruneIds: ids of finished jobs past retention, oldest first, at most @limit
    SELECT id FROM {p}jobs
    WHERE finished_at < @cutoff AND status IN (SELECT value FROM json_each(@statuses))
    ORDER BY finished_at, id LIMIT @limit`,
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
  readonly #events: SqliteEvents;
  readonly #bulk: SqliteBulk;

  constructor(private readonly db: SqliteDb) {
    this.#events = new SqliteEvents(db);
    this.#bulk = new SqliteBulk(db);
  }

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

  /** One page of a search: the pages decided in ../search-pages.ts over this database's reads (./search.ts). */
  search(p: JobSearch): Promise<JobSearchPage> {
    return searchPage(new SqliteMatchReader(this.db), p);
  }

  countMatching(p: MatchCountQuery): Promise<MatchCount> {
    return matchCount(new SqliteMatchReader(this.db), p);
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

  async retry(p: OperatorChange): Promise<AdminResult> {
    return this.#admin(p, retryRow);
  }

  async cancel(p: OperatorChange): Promise<AdminResult> {
    return this.#admin(p, cancelRow);
  }

  /** An operator's action on one job, in one write transaction; an id that cannot exist finds nothing. */
  #admin(p: OperatorChange, act: typeof retryRow): AdminResult {
    const by = checkOperator(p);
    const id = toSqlId(p.id);
    if (id === null) return { job: null, applied: false };
    const db = this.db;
    const now = db.now();
    return db.write(() => act(db, id, now, by && { ...by, bulkId: null }));
  }

  async prune(p: PruneParams): Promise<number> {
    if (p.statuses.length === 0 || p.limit <= 0) return 0;
    const db = this.db;
    const cutoff = db.now() - p.olderThanMs;
    return db.write(() => {
      const ids = (db.stmt(JOB_SQL.pruneIds).all({ cutoff, statuses: JSON.stringify(p.statuses), limit: p.limit }) as { id: number }[]).map((r) => r.id);
      return deleteJobs(db, ids);
    });
  }

  events(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    return this.#events.list(p);
  }

  bulk(p: BulkBatch): Promise<BulkBatchResult> {
    return this.#bulk.batch(p);
  }

  bulkCount(p: BulkRange): Promise<number> {
    return this.#bulk.count(p);
  }
}
