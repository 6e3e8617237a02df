/**
 * The reads behind jobs.search and jobs.countMatching on SQLite (the pages and cursors are
 * decided in ../search-pages.ts). Only the filters in use enter the WHERE clause, so the
 * planner can take an index (`? IS NULL OR …` would defeat it); one cached statement per
 * filter shape. A status is spelled as a constant, so a partial index on it applies: SQLite
 * uses one only when the query repeats its WHERE term. Prefixes are GLOBs (case-sensitive,
 * an index range where one exists); the text test folds ASCII case with lower(), which this
 * build of SQLite applies to ASCII letters only.
 */
import type { CheckedFilter } from '../../core/search.js';
import type { JobStatus } from '../../core/status.js';
import type { JobCount, JobRow } from '../../core/storage.js';
import type { MatchReader, MatchScan } from '../search-pages.js';
import type { SqliteDb } from './db.js';
import { toJobRow } from './sql.js';
import type { SqlJob } from './sql.js';

/** Each status as a constant term (SQLite uses a partial index only for a query repeating its WHERE term). */
export const STATUS_TERM: Record<JobStatus, string> = {
  queued: `status = 'queued'`,
  failed: `status = 'failed'`,
  running: `status = 'running'`,
  succeeded: `status = 'succeeded'`,
  dead: `status = 'dead'`,
  cancelled: `status = 'cancelled'`,
  waiting: `status = 'waiting'`,
};

/** Without id bounds (the summary's counts) queued jobs are read from the due partial index; within them the primary key's range is shorter. */
const statusTerm = (st: JobStatus, bounded: boolean): string =>
  !bounded && st === 'queued' ? `status IN ('queued','failed') AND ${STATUS_TERM[st]}` : STATUS_TERM[st];

const TEXT_TEST = `(instr(lower(payload), @text) > 0 OR instr(lower(last_error), @text) > 0 OR instr(lower(last_error_code), @text) > 0)`;

/** Bind values of a scan; ids past SQLite's safe integers bound nothing (no id is that large). */
function params(s: MatchScan): Record<string, unknown> {
  const f = s.filter;
  const num = (id: string): number => Math.min(Number(id), Number.MAX_SAFE_INTEGER);
  return {
    ...(f.queue ? { queue: f.queue.prefix ? f.queue.glob : f.queue.value } : {}),
    ...(f.type ? { type: f.type.prefix ? f.type.glob : f.type.value } : {}),
    ...(f.idempotencyKey ? { key: f.idempotencyKey.prefix ? f.idempotencyKey.glob : f.idempotencyKey.value } : {}),
    ...(f.id !== null ? { id: num(f.id) } : {}),
    ...(f.scheduleName !== null ? { schedule: f.scheduleName } : {}),
    ...(f.text !== null ? { text: f.text } : {}),
    ...(s.below !== null ? { below: num(s.below) } : {}),
    ...(s.above !== null ? { above: num(s.above) } : {}),
    limit: s.limit,
    scan: s.scanLimit,
  };
}

/** The WHERE terms of the filter's exact parts and the scan's cursor. */
function where(f: CheckedFilter, s: Pick<MatchScan, 'below' | 'above'>): string {
  const terms = [
    f.status !== null ? statusTerm(f.status, s.below !== null || s.above !== null) : null,
    f.queue ? (f.queue.prefix ? 'queue GLOB @queue' : 'queue = @queue') : null,
    f.type ? (f.type.prefix ? 'type GLOB @type' : 'type = @type') : null,
    f.idempotencyKey ? (f.idempotencyKey.prefix ? 'idempotency_key GLOB @key AND idempotency_key IS NOT NULL' : 'idempotency_key = @key') : null,
    f.id !== null ? 'id = @id' : null,
    f.scheduleName !== null ? 'schedule_name = @schedule' : null,
    s.below !== null ? 'id < @below' : null,
    s.above !== null ? 'id > @above' : null,
  ].filter((t) => t !== null);
  return terms.length ? `WHERE ${terms.join(' AND ')}` : '';
}

/** The scan's candidates in its order: with text, the first @scan of them (the rows the text test may read). */
function candidates(s: MatchScan, cols: string): string {
  const order = s.newestFirst ? 'DESC' : 'ASC';
  const limit = s.filter.text !== null ? 'LIMIT @scan' : '';
  return `SELECT ${cols} FROM {p}jobs ${where(s.filter, s)} ORDER BY id ${order} ${limit}`;
}

export class SqliteMatchReader implements MatchReader {
  constructor(private readonly db: SqliteDb) {}

  async rows(s: MatchScan): Promise<JobRow[]> {
    const order = s.newestFirst ? 'DESC' : 'ASC';
    const sql = s.filter.text === null
      ? `-- leasehold jobs.search: jobs matching the filter past the cursor, in id order, at most @limit
        ${candidates(s, '*')} LIMIT @limit`
      : `-- leasehold jobs.search: jobs matching the filter past the cursor whose text holds @text, among the first @scan candidates, at most @limit
        SELECT * FROM (${candidates(s, '*')}) WHERE ${TEXT_TEST} ORDER BY id ${order} LIMIT @limit`;
    const rows = this.db.read(() => this.db.stmt(sql).all(params(s)) as SqlJob[]);
    return rows.map(toJobRow);
  }

  async count(s: MatchScan): Promise<number> {
    const sql = s.filter.text === null
      ? `-- leasehold jobs.countMatching: how many jobs match the filter, counting at most @limit
        SELECT count(*) AS n FROM (SELECT 1 FROM {p}jobs ${where(s.filter, s)} LIMIT @limit)`
      : `-- leasehold jobs.countMatching: how many of the first @scan candidates hold @text, counting at most @limit
        SELECT count(*) AS n FROM (SELECT 1 FROM (${candidates(s, 'payload, last_error, last_error_code')}) WHERE ${TEXT_TEST} LIMIT @limit)`;
    return this.db.read(() => (this.db.stmt(sql).get(params(s)) as { n: number }).n);
  }

  async candidates(s: MatchScan): Promise<{ n: number; last: string | null }> {
    const sql = `-- leasehold jobs.searchWindow: how many candidates the text test sees (at most @scan) and the id of the last
      SELECT count(*) AS n, ${s.newestFirst ? 'min' : 'max'}(id) AS last FROM (${candidates(s, 'id')})`;
    const r = this.db.read(() => this.db.stmt(sql).get(params(s)) as { n: number; last: number | null });
    return { n: r.n, last: r.last === null ? null : String(r.last) };
  }

  async estimate(): Promise<number | null> {
    return null;
  }

  async idRange(): Promise<{ min: bigint; max: bigint } | null> {
    const sql = `-- leasehold jobs.idRange: the smallest and largest job id (two reads of the primary key's ends)
      SELECT (SELECT min(id) FROM {p}jobs) AS lo, (SELECT max(id) FROM {p}jobs) AS hi`;
    const r = this.db.read(() => this.db.stmt(sql).get() as { lo: number | null; hi: number | null });
    return r.lo === null || r.hi === null ? null : { min: BigInt(r.lo), max: BigInt(r.hi) };
  }

  async groups(statuses: readonly JobStatus[]): Promise<JobCount[]> {
    // one arm per status, each over its own index where it has one
    const arms = statuses.map((st) => `SELECT queue, type, status, count(*) AS count,
        sum(CASE WHEN status IN ('queued','failed') AND run_at <= @now THEN 1 ELSE 0 END) AS due
      FROM {p}jobs WHERE ${statusTerm(st, false)} GROUP BY queue, type`);
    const sql = `-- leasehold queues.summary: jobs of the listed statuses by queue, type and status, with how many are due
      ${arms.join('\n      UNION ALL ')}
      ORDER BY queue, type, status`;
    const rows = this.db.read(() => this.db.stmt(sql).all({ now: this.db.now() }) as JobCount[]);
    return rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.count, due: r.due }));
  }
}
