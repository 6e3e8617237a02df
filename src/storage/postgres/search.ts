/**
 * The reads behind jobs.search and jobs.countMatching on PostgreSQL (the pages and cursors are
 * decided in ../search-pages.ts). Only the filters in use enter the WHERE clause, with a
 * status spelled as a constant so the partial indexes on rare statuses apply; plain statements,
 * planned with their values (a generic plan could not pick a partial index). Prefixes are LIKE
 * patterns escaped in core; the text test folds case under the "C" collation, whose lower()
 * changes ASCII letters only. Past a count's cap, the estimate is the planner's row count for
 * the same filter (EXPLAIN, nothing run).
 */
import type { CheckedFilter } from '../../core/search.js';
import type { JobStatus } from '../../core/status.js';
import type { JobCount, JobRow } from '../../core/storage.js';
import type { MatchReader, MatchScan } from '../search-pages.js';
import type { Db } from './db.js';
import { NOW, toJobCount, toJobRow } from './sql.js';

const STATUS_TERM: Record<JobStatus, string> = {
  queued: `status = 'queued'`,
  failed: `status = 'failed'`,
  running: `status = 'running'`,
  succeeded: `status = 'succeeded'`,
  dead: `status = 'dead'`,
  cancelled: `status = 'cancelled'`,
  waiting: `status = 'waiting'`,
};

/** A statement's WHERE terms and their values, numbered as they are added. */
class Terms {
  readonly terms: string[] = [];
  readonly values: unknown[] = [];

  /** `$n` for a new value. */
  bind(v: unknown, cast: string): string {
    this.values.push(v);
    return `$${this.values.length}::${cast}`;
  }

  add(term: string | null): void {
    if (term !== null) this.terms.push(term);
  }

  where(): string {
    return this.terms.length ? `WHERE ${this.terms.join(' AND ')}` : '';
  }
}

/** The filter's exact parts and the scan's cursor as WHERE terms. */
function exactTerms(f: CheckedFilter, s: Pick<MatchScan, 'below' | 'above'>): Terms {
  const t = new Terms();
  const name = (col: string, m: CheckedFilter['queue']): string | null =>
    m === null ? null : m.prefix ? `${col} LIKE ${t.bind(m.like, 'text')} ESCAPE '!'` : `${col} = ${t.bind(m.value, 'text')}`;
  t.add(f.status !== null ? STATUS_TERM[f.status] : null);
  t.add(name('queue', f.queue));
  t.add(name('type', f.type));
  t.add(name('idempotency_key', f.idempotencyKey));
  t.add(f.id !== null ? `id = ${t.bind(f.id, 'bigint')}` : null);
  t.add(f.scheduleName !== null ? `schedule_name = ${t.bind(f.scheduleName, 'text')}` : null);
  t.add(s.below !== null ? `id < ${t.bind(s.below, 'bigint')}` : null);
  t.add(s.above !== null ? `id > ${t.bind(s.above, 'bigint')}` : null);
  return t;
}

/** The text test over a candidate row `c`: a substring of the error code, error or payload text, ASCII case folded. */
function textTest(t: Terms, text: string): string {
  const k = t.bind(text, 'text');
  const has = (col: string): string => `strpos(lower(${col} COLLATE "C"), ${k}) > 0`;
  return `(${has('c.payload::text')} OR ${has('c.last_error')} OR ${has('c.last_error_code')})`;
}

export class PostgresMatchReader implements MatchReader {
  constructor(private readonly db: Db) {}

  /** The scan's candidates in its order; with text, only the first scanLimit. */
  #candidates(t: Terms, s: MatchScan, cols: string): string {
    const limit = s.filter.text !== null ? `LIMIT ${t.bind(s.scanLimit, 'int')}` : '';
    return `SELECT ${cols} FROM ${this.db.q}.jobs ${t.where()} ORDER BY id ${s.newestFirst ? 'DESC' : 'ASC'} ${limit}`;
  }

  async rows(s: MatchScan): Promise<JobRow[]> {
    const t = exactTerms(s.filter, s);
    const order = s.newestFirst ? 'DESC' : 'ASC';
    let sql: string;
    if (s.filter.text === null) {
      sql = `-- leasehold searchJobs: jobs matching the filter past the cursor, in id order
${this.#candidates(t, s, '*')} LIMIT ${t.bind(s.limit, 'int')}`;
    } else {
      const from = this.#candidates(t, s, '*');
      sql = `-- leasehold searchJobs: jobs matching the filter past the cursor whose text holds the needle, among the first candidates
SELECT c.* FROM (${from}) AS c WHERE ${textTest(t, s.filter.text)} ORDER BY c.id ${order} LIMIT ${t.bind(s.limit, 'int')}`;
    }
    return (await this.db.run('searchJobs', sql, t.values)).map(toJobRow);
  }

  async count(s: MatchScan): Promise<number> {
    const t = exactTerms(s.filter, s);
    let sql: string;
    if (s.filter.text === null) {
      sql = `-- leasehold countMatchingJobs: how many jobs match the filter, counting up to a limit
SELECT count(*)::int AS n FROM (SELECT 1 FROM ${this.db.q}.jobs ${t.where()} LIMIT ${t.bind(s.limit, 'int')}) AS m`;
    } else {
      const from = this.#candidates(t, s, 'payload, last_error, last_error_code');
      sql = `-- leasehold countMatchingJobs: how many of the first candidates hold the text, counting up to a limit
SELECT count(*)::int AS n FROM (SELECT 1 FROM (${from}) AS c WHERE ${textTest(t, s.filter.text)} LIMIT ${t.bind(s.limit, 'int')}) AS m`;
    }
    const f = s.filter;
    // the summary's count of one live or rare status: read from its index, not the heap's start
    const indexed = s.below === null && s.above === null && f.status !== null && f.status !== 'succeeded';
    const [r] = indexed ? await this.#indexScans('countMatchingJobs', sql, t.values) : await this.db.run('countMatchingJobs', sql, t.values);
    return Number(r?.n ?? 0);
  }

  /**
   * A statement planned with index scans only. The live statuses' rows are the newest, at the
   * heap's end: a plan that expects them spread out reads most of the heap from its start to
   * find them (a count of queued jobs read 500,000 rows for 10,000).
   */
  #indexScans(what: string, sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.db.transaction(what, async (c) => (await c.query(sql, values)).rows as Record<string, unknown>[], 'BEGIN; SET LOCAL enable_seqscan = off');
  }

  async candidates(s: MatchScan): Promise<{ n: number; last: string | null }> {
    const t = exactTerms(s.filter, s);
    const sql = `-- leasehold searchWindow: how many candidates the text test sees and the id of the last
SELECT count(*)::int AS n, ${s.newestFirst ? 'min' : 'max'}(id)::text AS last FROM (${this.#candidates(t, s, 'id')}) AS c`;
    const [r] = await this.db.run('searchWindow', sql, t.values);
    return { n: Number(r?.n ?? 0), last: r?.last == null ? null : String(r.last) };
  }

  async estimate(f: CheckedFilter): Promise<number | null> {
    const t = exactTerms(f, { below: null, above: null });
    const sql = `-- leasehold estimateMatchingJobs: the planner's row estimate for the filter, nothing run
EXPLAIN (FORMAT JSON) SELECT 1 FROM ${this.db.q}.jobs ${t.where()}`;
    const [r] = await this.db.run('estimateMatchingJobs', sql, t.values);
    const plan = (r?.['QUERY PLAN'] as { Plan?: { 'Plan Rows'?: number } }[] | undefined)?.[0]?.Plan;
    return typeof plan?.['Plan Rows'] === 'number' ? plan['Plan Rows'] : null;
  }

  async idRange(): Promise<{ min: bigint; max: bigint } | null> {
    const sql = `-- leasehold jobIdRange: the smallest and largest job id (the primary key's two ends)
SELECT (SELECT min(id) FROM ${this.db.q}.jobs)::text AS lo, (SELECT max(id) FROM ${this.db.q}.jobs)::text AS hi`;
    const [r] = await this.db.run('jobIdRange', sql);
    return r?.lo == null || r.hi == null ? null : { min: BigInt(String(r.lo)), max: BigInt(String(r.hi)) };
  }

  async groups(statuses: readonly JobStatus[]): Promise<JobCount[]> {
    // one arm per status, each over its own index (succeeded has none: the heap, apart)
    const sql = (sts: readonly JobStatus[]): string => `-- leasehold summarizeJobs: jobs of the listed statuses by queue, type and status, with how many are due
${sts.map((st) => `SELECT queue, type, status, count(*)::int AS count,
  (count(*) FILTER (WHERE status IN ('queued','failed') AND run_at <= ${NOW}))::int AS due
FROM ${this.db.q}.jobs WHERE ${STATUS_TERM[st]} GROUP BY queue, type, status`).join('\nUNION ALL\n')}`;
    const live = statuses.filter((st) => st !== 'succeeded');
    const [a, b] = await Promise.all([
      live.length ? this.#indexScans('summarizeJobs', sql(live)) : Promise.resolve([]),
      statuses.includes('succeeded') ? this.db.run('summarizeJobs', sql(['succeeded'])) : Promise.resolve([]),
    ]);
    return [...a, ...b].map(toJobCount);
  }
}
