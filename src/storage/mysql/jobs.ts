/**
 * The job rows on MySQL/MariaDB: insert (batches without unique keys in insert.ts, with them in
 * unique-keys.ts), read, and an operator's actions, recorded as events (events.ts) when an actor
 * is given; bulk actions (bulk.ts).
 */
import { checkOperator } from '../../core/operator.js';
import { checkPruneCursor } from '../../core/prune-cursor.js';
import type { JobStatus } from '../../core/status.js';
import type {
  BulkBatch, BulkBatchResult, BulkRange, InsertResult, JobEvent, JobEventKind, JobQuery, JobRow, JobStore, NewJob, OperatorChange, PruneBatch, PruneParams,
} from '../../core/storage.js';
import { MysqlBulk } from './bulk.js';
import { type Db, type Queryable, exec, isDuplicate, run } from './db.js';
import { MysqlEvents, eventStatement, eventsSql } from './events.js';
import { insertJobsOn, insertSql, isSingleStatement, prepareInsert } from './insert.js';
import { madeDue, wakeupsOf } from './wakeups.js';
import { makesDue } from './finish.js';
import { JOB_COLS, NOW, type Row, type Tables, idParam, micros, parseUtc, sharedSql, toJobRow, utcLiteral, waitMs } from './sql.js';
import { insertUniqueOn, insertWithUniqueKeys, uniqueKeySql } from './unique-keys.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from '../../core/search.js';
import { matchCount, searchPage } from '../search-pages.js';
import { MysqlMatchReader } from './search.js';
import { SqlAggregate } from '../aggregates.js';
import { notHeld, settleCancelled, workflowsSql } from './workflows.js';
import { batchesOf } from '../../core/batches.js';
import { RETRY_GUARD } from '../operator-guards.js';

export function jobsSql(t: Tables) {
  return {
    ...sharedSql(t),
    ...insertSql(t),
    ...uniqueKeySql(t),
    listJobs: (where: readonly string[]): string => `-- leasehold listJobs: newest jobs first, filtered, keyset-paginated below an id
      SELECT ${JOB_COLS} FROM ${t.jobs}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
    retryJob: `-- leasehold retryJob: admin "retry now": back to queued, due now, attempts reset, lease and finish cleared
      UPDATE ${t.jobs} SET status = 'queued', run_at = ${NOW}, attempts = 0, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, finished_at = NULL, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'dead', 'cancelled') AND ${RETRY_GUARD}`,
    jobForUpdate: `-- leasehold jobForUpdate: one job, locked for an admin change
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE id = ? FOR UPDATE`,
    cancelJob: `-- leasehold cancelJob: admin cancel: cancelled now, lease cleared, error code CANCELLED
      UPDATE ${t.jobs} SET status = 'cancelled', finished_at = ${NOW}, locked_by = NULL, lease_token = NULL,
        locked_until = NULL, last_error_code = 'CANCELLED', last_error = ?, updated_at = ${NOW}
      WHERE id = ? AND status IN ('queued', 'failed', 'running', 'waiting')`,
    pruneCandidates: `-- leasehold pruneCandidates: lock finished jobs past retention after the cursor, at most N, with the batch each may leave empty
      SELECT id, DATE_FORMAT(finished_at, '%Y-%m-%d %H:%i:%s.%f') AS cursor_at, batch_id, idempotency_key FROM ${t.jobs} FORCE INDEX (${t.jobs}_prune)
      WHERE status IN (?) AND finished_at < ${NOW} - INTERVAL ? MICROSECOND AND finished_at >= ? AND (finished_at > ? OR id > ?)
        AND ${notHeld(t, t.jobs)} ORDER BY finished_at, id LIMIT ? FOR UPDATE`,
    pruneAttempts: `-- leasehold pruneAttempts: delete the attempt history of pruned jobs
      DELETE FROM ${t.attempts} WHERE job_id IN (?)`,
    pruneEvents: `-- leasehold pruneEvents: delete the events of pruned jobs
      DELETE FROM ${t.events} WHERE job_id IN (?)`,
    forgetBatches: `-- leasehold pruneJobs (batch): done batches left without members or callback job
      DELETE FROM ${t.batches} WHERE id IN (?) AND state = 'done'
        AND NOT EXISTS (SELECT 1 FROM ${t.jobs} m WHERE m.batch_id = ${t.batches}.id)
        AND NOT EXISTS (SELECT 1 FROM ${t.jobs} c WHERE c.idempotency_key = CONCAT('leasehold:batch:', ${t.batches}.id))`,
    pruneJobs: `-- leasehold pruneJobs: delete pruned jobs
      DELETE FROM ${t.jobs} WHERE id IN (?)`,
  };
}

export type JobsSql = ReturnType<typeof jobsSql>;

type AdminResult = { job: JobRow | null; applied: boolean };

const CANCEL_MESSAGE = 'cancelled by an operator';

export class MysqlJobs extends SqlAggregate<Db, JobsSql> implements JobStore {
  private readonly eventSql = eventsSql(this.db.t);
  private readonly history = new MysqlEvents(this.db);
  private readonly bulkActions = new MysqlBulk(this.db);

  constructor(db: Db) {
    super(db, jobsSql(db.t));
  }

  async insert(p: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]> {
    const batch = prepareInsert(p.jobs);
    if (p.tx !== undefined && p.tx !== null) {
      return this.db.onCaller(p.tx, 'insertJobs', async (c) => {
        if (p.jobs.length === 0) return [];
        const f = await this.db.features(c);
        return batch.unique ? insertUniqueOn(c, this.sql, batch, f, false) : insertJobsOn(c, this.sql, batch, f);
      });
    }
    if (p.jobs.length === 0) return [];
    const f = await this.db.features();
    const results = batch.unique
      ? await insertWithUniqueKeys(this.db, this.sql, batch, f)
      : isSingleStatement(batch, f)
        ? // one INSERT … RETURNING is atomic by itself: no BEGIN / COMMIT round trips
          await this.db.autocommit('insertJobs', (c) => insertJobsOn(c, this.sql, batch, f))
        : await this.db.tx('insertJobs', (c) => insertJobsOn(c, this.sql, batch, f));
    // committed: parked workers may claim them now
    if (madeDue(results)) wakeupsOf(this.db).jobsDue();
    return results;
  }

  async get(p: { id: string }): Promise<JobRow | null> {
    const id = idParam(p.id);
    if (id === null) return null;
    const [row] = await this.db.one('getJob', (c) => run(c, this.sql.jobById, [id]));
    return row ? toJobRow(row) : null;
  }

  /** One page of a search: the pages decided in ../search-pages.ts over this database's reads (./search.ts). */
  search(p: JobSearch): Promise<JobSearchPage> {
    return searchPage(new MysqlMatchReader(this.db), p);
  }

  countMatching(p: MatchCountQuery): Promise<MatchCount> {
    return matchCount(new MysqlMatchReader(this.db), p);
  }

  async list(q: JobQuery): Promise<JobRow[]> {
    const filters: [string, unknown][] = [];
    if (q.status !== undefined) filters.push(['status = ?', q.status]);
    if (q.queue !== undefined) filters.push(['queue = ?', q.queue]);
    if (q.type !== undefined) filters.push(['type = ?', q.type]);
    if (q.beforeId !== undefined) filters.push(['id < ?', idParam(q.beforeId)]);
    if (q.limit <= 0 || filters.some(([, v]) => v === null)) return [];
    const values = [...filters.map((f) => f[1]), q.limit];
    return (await this.db.one('listJobs', (c) => run(c, this.sql.listJobs(filters.map((f) => f[0])), values))).map(toJobRow);
  }

  /**
   * READ COMMITTED, as every operator change: the job locked and read as it is, the change, and
   * its event (events.ts) when an actor is given and it applied.
   */
  async retry(p: OperatorChange): Promise<AdminResult> {
    const by = checkOperator(p);
    const id = idParam(p.id);
    if (id === null) return { job: null, applied: false };
    const out = await this.db.tx('retryJob', async (c): Promise<AdminResult> => {
      const [prev] = await run(c, this.sql.jobForUpdate, [id]);
      if (!prev) return { job: null, applied: false };
      const res = await exec(c, this.sql.retryJob, [id]).catch(async (e: unknown) => {
        // another job holds its unique key now: it comes back without one
        if (!isDuplicate(e)) throw e;
        await exec(c, this.sql.releaseUniqueKey, [id]);
        return exec(c, this.sql.retryJob, [id]);
      });
      const applied = res.affectedRows > 0;
      if (applied && by) await this.#record(c, 'retried', id, prev, by);
      const [row] = await run(c, this.sql.jobById, [id]);
      return { job: row ? toJobRow(row) : null, applied };
    }, true);
    if (out.applied) wakeupsOf(this.db).jobsDue();
    return out;
  }

  /** A running attempt ends as cancelled: its history row is written from the job row as locked before the cancel. */
  async cancel(p: OperatorChange): Promise<AdminResult> {
    const by = checkOperator(p);
    const id = idParam(p.id);
    if (id === null) return { job: null, applied: false };
    let due = false;
    const out = await this.db.tx('cancelJob', async (c) => {
      due = false;
      const [prev] = await run(c, this.sql.jobForUpdate, [id]);
      if (!prev) return { job: null, applied: false };
      const applied = (await exec(c, this.sql.cancelJob, [CANCEL_MESSAGE, id])).affectedRows > 0;
      const [after] = await run(c, this.sql.jobById, [id]);
      if (applied && after && prev.status === 'running' && prev.lease_token !== null) {
        // started_at as the text read (exact to the µs), ended when the job row says, as a finish writes it
        const [started, ended] = [String(prev.started_at), String(after.finished_at)];
        const row = [id, Number(prev.attempts), String(prev.locked_by), String(prev.lease_token), started, ended, parseUtc(ended).getTime() - parseUtc(started).getTime()];
        await exec(c, this.sql.insertAttempts(1), [...row, 'cancelled', 'CANCELLED', CANCEL_MESSAGE, null, null, waitMs(prev.run_at, started)]);
      }
      if (applied && by) await this.#record(c, 'cancelled', id, prev, by);
      // it ends for its workflow and its batch as a finish would (a batch's callback may be due)
      const wf = workflowsSql(this.db.t);
      for (const w of applied && after ? await settleCancelled(c, wf, [prev], String(after.finished_at)) : []) {
        due ||= makesDue(wf, w);
        await exec(c, w.sql, w.values);
      }
      return { job: after ? toJobRow(after) : null, applied };
    }, true);
    if (due) wakeupsOf(this.db).jobsDue();
    return out;
  }

  /** The event of a change that applied, after the change's own writes. */
  async #record(c: Queryable, kind: JobEventKind, id: bigint, prev: Row, by: { actor: string; source: string | null }): Promise<void> {
    const stmt = eventStatement(this.eventSql, kind, [{ id, was: String(prev.status) as JobStatus, wasAttempts: Number(prev.attempts) }], { ...by, bulkId: null });
    if (stmt) await exec(c, stmt.sql, stmt.values);
  }

  async prune(p: PruneParams): Promise<number> {
    return (await this.pruneBatch(p)).deleted;
  }

  /**
   * READ COMMITTED: the locking scan of jobs_prune (finished_at) then locks only the rows it
   * picks. Under REPEATABLE READ it would also lock the gap before the oldest finished_at, where
   * every new job's entry (finished_at NULL) goes: enqueues would wait for the prune to commit.
   */
  async pruneBatch(p: PruneParams): Promise<PruneBatch> {
    checkPruneCursor(p.after);
    const none = { deleted: 0, cursor: p.after ?? null };
    if (p.statuses.length === 0 || p.limit <= 0) return none;
    // no cursor: from before every finished_at and id
    const at = p.after ? utcLiteral(p.after.finishedAt) : '1000-01-01 00:00:00.000';
    const afterId = (p.after && idParam(p.after.id)) ?? 0n;
    let batches: string[] = [];
    let last: Row | undefined;
    const n = await this.db.tx('pruneJobs', async (c) => {
      const rows = await run(c, this.sql.pruneCandidates, [p.statuses, micros(p.olderThanMs), at, at, afterId, p.limit]);
      batches = batchesOf(rows.map((r) => ({ batchId: r.batch_id == null ? null : String(r.batch_id), idempotencyKey: r.idempotency_key == null ? null : String(r.idempotency_key) })));
      last = rows[rows.length - 1];
      if (rows.length === 0) return 0;
      const ids = rows.map((r) => BigInt(String(r.id)));
      await exec(c, this.sql.pruneAttempts, [ids]);
      await exec(c, this.sql.pruneEvents, [ids]);
      await exec(c, workflowsSql(this.db.t).forgetEdges, [ids]);
      return (await exec(c, this.sql.pruneJobs, [ids])).affectedRows;
    }, true);
    // after the commit: of two prunes taking members of one batch, the later sees both gone
    if (batches.length > 0) await this.db.one('pruneJobs', (c) => exec(c, this.sql.forgetBatches, [batches.map((b) => BigInt(b))]));
    // the cursor's finished_at cut to the millisecond, never rounded up
    return last ? { deleted: n, cursor: { finishedAt: parseUtc(last.cursor_at), id: String(last.id) } } : none;
  }

  events(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    return this.history.list(p);
  }

  bulk(p: BulkBatch): Promise<BulkBatchResult> {
    return this.bulkActions.batch(p);
  }

  bulkCount(p: BulkRange): Promise<number> {
    return this.bulkActions.count(p);
  }
}

