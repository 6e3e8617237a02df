/**
 * Job rows on SQLite: insert (insert.ts), get, list, and an operator's retry, cancel
 * (operator.ts), prune, history (events.ts) and bulk actions (bulk.ts).
 */
import { checkOperator } from '../../core/operator.js';
import type { BulkBatch, BulkBatchResult, BulkRange, InsertResult, JobEvent, JobQuery, JobRow, JobStore, NewJob, OperatorChange, PruneBatch, PruneParams, SyncJobInsert } from '../../core/storage.js';
import { SqliteBulk } from './bulk.js';
import type { SqliteDb } from './db.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from '../../core/search.js';
import { matchCount, searchPage } from '../search-pages.js';
import { SqliteMatchReader } from './search.js';
import { SqliteEvents } from './events.js';
import { insertJobs, insertJobsOn } from './insert.js';
import { type AdminResult, cancelRow, deleteJobs, retryRow } from './operator.js';
import { toJobRow, toSqlId } from './sql.js';
import type { SqlJob } from './sql.js';
import { FORGET_BATCHES, notHeld } from './workflows.js';
import { batchesOf } from '../../core/batches.js';
import { checkPruneCursor } from '../../core/prune-cursor.js';

const JOB_SQL = {
  get: `-- leasehold jobs.get: one job by id
    SELECT * FROM {p}jobs WHERE id = ?`,
  pruneIds: `-- leasehold jobs.pruneIds: ids of finished jobs past retention after the cursor, oldest first, at most @limit, with the batch each may leave empty
    SELECT id, finished_at, batch_id, idempotency_key FROM {p}jobs
    WHERE finished_at < @cutoff AND finished_at >= @afterAt AND (finished_at > @afterAt OR id > @afterId)
      AND status IN (SELECT value FROM json_each(@statuses)) AND ${notHeld('{p}jobs')}
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

export class SqliteJobs implements JobStore, SyncJobInsert {
  readonly #events: SqliteEvents;
  readonly #bulk: SqliteBulk;

  constructor(private readonly db: SqliteDb) {
    this.#events = new SqliteEvents(db);
    this.#bulk = new SqliteBulk(db);
  }

  /** See insert.ts. With `tx`, the caller's better-sqlite3 handle inside their open transaction on this file. */
  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    return p.tx === undefined || p.tx === null ? insertJobs(this.db, p.jobs) : this.insertSync({ jobs: p.jobs, tx: p.tx });
  }

  /** The jobs written on the caller's handle before this returns; they exist once the caller commits. */
  insertSync(p: { jobs: readonly NewJob[]; tx: unknown }): InsertResult[] {
    return this.db.onCaller(p.tx, (on) => insertJobsOn(on, this.db.now(), p.jobs));
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
    return (await this.pruneBatch(p)).deleted;
  }

  async pruneBatch(p: PruneParams): Promise<PruneBatch> {
    checkPruneCursor(p.after);
    const none = { deleted: 0, cursor: p.after ?? null };
    if (p.statuses.length === 0 || p.limit <= 0) return none;
    const db = this.db;
    const cutoff = db.now() - p.olderThanMs;
    // no cursor: from before every finished_at and id
    const after = p.after ? { afterAt: p.after.finishedAt.getTime(), afterId: toSqlId(p.after.id) ?? 0 } : { afterAt: -Number.MAX_SAFE_INTEGER, afterId: 0 };
    return db.write(() => {
      const rows = db.stmt(JOB_SQL.pruneIds).all({ cutoff, statuses: JSON.stringify(p.statuses), limit: p.limit, ...after }) as { id: number; finished_at: number; batch_id: number | null; idempotency_key: string | null }[];
      const n = deleteJobs(db, rows.map((r) => r.id));
      const batches = batchesOf(rows.map((r) => ({ batchId: r.batch_id === null ? null : String(r.batch_id), idempotencyKey: r.idempotency_key })));
      if (batches.length > 0) db.stmt(FORGET_BATCHES).run({ ids: JSON.stringify(batches.map(Number)) });
      const last = rows[rows.length - 1];
      return last ? { deleted: n, cursor: { finishedAt: new Date(last.finished_at), id: String(last.id) } } : none;
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
