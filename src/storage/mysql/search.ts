/**
 * The reads behind jobs.search and jobs.countMatching on MySQL/MariaDB (the pages and cursors
 * are decided in ../search-pages.ts). Only the filters in use enter the WHERE clause; names
 * compare under the tables' binary collation, so a LIKE prefix (escaped in core) is exact and
 * an index range where one exists. LOWER() would fold every letter the collation knows, so the
 * text test folds A-Z alone, one REPLACE per letter. Past a count's cap, the estimate is
 * EXPLAIN's rows × filtered for the same filter (nothing run).
 */
import type { CheckedFilter, NameMatch } from '../../core/search.js';
import type { JobStatus } from '../../core/status.js';
import type { JobCount, JobRow } from '../../core/storage.js';
import type { MatchReader, MatchScan } from '../search-pages.js';
import { type Db, run } from './db.js';
import { JOB_COLS, NOW, toJobRow } from './sql.js';

/** `expr` with the ASCII capitals A-Z in lower case and every other character as it is. */
function foldAscii(expr: string): string {
  let out = expr;
  for (let c = 65; c <= 90; c++) out = `REPLACE(${out}, '${String.fromCharCode(c)}', '${String.fromCharCode(c + 32)}')`;
  return out;
}

const has = (col: string): string => `LOCATE(?, ${foldAscii(col)}) > 0`;
/** The text test over a candidate row; binds the needle three times. */
const TEXT_TEST = `(${has('c.payload')} OR ${has('c.last_error')} OR ${has('c.last_error_code')})`;

/** The filter's exact parts and the scan's cursor as WHERE terms, with their values in order. */
function exactTerms(f: CheckedFilter, s: Pick<MatchScan, 'below' | 'above'>): { where: string; values: unknown[] } {
  const terms: string[] = [];
  const values: unknown[] = [];
  const add = (term: string, ...v: unknown[]): void => {
    terms.push(term);
    values.push(...v);
  };
  const name = (col: string, m: NameMatch | null): void => {
    if (m) add(m.prefix ? `${col} LIKE ? ESCAPE '!'` : `${col} = ?`, m.prefix ? m.like : m.value);
  };
  if (f.status !== null) add('status = ?', f.status);
  name('queue', f.queue);
  name('type', f.type);
  name('idempotency_key', f.idempotencyKey);
  if (f.id !== null) add('id = ?', BigInt(f.id));
  if (f.scheduleName !== null) add('schedule_name = ?', f.scheduleName);
  if (s.below !== null) add('id < ?', BigInt(s.below));
  if (s.above !== null) add('id > ?', BigInt(s.above));
  return { where: terms.length ? `WHERE ${terms.join(' AND ')}` : '', values };
}

export class MysqlMatchReader implements MatchReader {
  constructor(private readonly db: Db) {}

  /** The scan's candidates in its order; with text, only the first scanLimit. */
  #candidates(s: MatchScan, cols: string): { sql: string; values: unknown[] } {
    const w = exactTerms(s.filter, s);
    const text = s.filter.text !== null;
    return {
      sql: `SELECT ${cols} FROM ${this.db.t.jobs} ${w.where} ORDER BY id ${s.newestFirst ? 'DESC' : 'ASC'}${text ? ' LIMIT ?' : ''}`,
      values: text ? [...w.values, s.scanLimit] : w.values,
    };
  }

  async rows(s: MatchScan): Promise<JobRow[]> {
    const c = this.#candidates(s, JOB_COLS);
    const text = s.filter.text;
    // without text: the page's ids first, from an index alone where one covers the filter
    // (the claim index holds status, type and queue), then only those rows are read
    const ids = this.#candidates(s, 'id');
    const sql = text === null
      ? `-- leasehold searchJobs: jobs matching the filter past the cursor, in id order
        SELECT ${JOB_COLS} FROM ${this.db.t.jobs} AS j JOIN (${ids.sql} LIMIT ?) AS page USING (id) ORDER BY j.id ${s.newestFirst ? 'DESC' : 'ASC'}`
      : `-- leasehold searchJobs: jobs matching the filter past the cursor whose text holds the needle, among the first candidates
        SELECT c.* FROM (${c.sql}) AS c WHERE ${TEXT_TEST} ORDER BY c.id ${s.newestFirst ? 'DESC' : 'ASC'} LIMIT ?`;
    const values = text === null ? [...ids.values, s.limit] : [...c.values, text, text, text, s.limit];
    return (await this.db.one('searchJobs', (q) => run(q, sql, values))).map(toJobRow);
  }

  async count(s: MatchScan): Promise<number> {
    const text = s.filter.text;
    let sql: string;
    let values: unknown[];
    if (text === null) {
      const w = exactTerms(s.filter, s);
      sql = `-- leasehold countMatchingJobs: how many jobs match the filter, counting up to a limit
        SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${this.db.t.jobs} ${w.where} LIMIT ?) AS m`;
      values = [...w.values, s.limit];
    } else {
      const c = this.#candidates(s, 'payload, last_error, last_error_code');
      sql = `-- leasehold countMatchingJobs: how many of the first candidates hold the text, counting up to a limit
        SELECT COUNT(*) AS n FROM (SELECT 1 FROM (${c.sql}) AS c WHERE ${TEXT_TEST} LIMIT ?) AS m`;
      values = [...c.values, text, text, text, s.limit];
    }
    const [r] = await this.db.one('countMatchingJobs', (q) => run(q, sql, values));
    return Number(r?.n ?? 0);
  }

  async candidates(s: MatchScan): Promise<{ n: number; last: string | null }> {
    const c = this.#candidates(s, 'id');
    const sql = `-- leasehold searchWindow: how many candidates the text test sees and the id of the last
      SELECT COUNT(*) AS n, ${s.newestFirst ? 'MIN' : 'MAX'}(id) AS last FROM (${c.sql}) AS c`;
    const [r] = await this.db.one('searchWindow', (q) => run(q, sql, c.values));
    return { n: Number(r?.n ?? 0), last: r?.last == null ? null : String(r.last) };
  }

  async estimate(f: CheckedFilter): Promise<number | null> {
    const w = exactTerms(f, { below: null, above: null });
    const sql = `-- leasehold estimateMatchingJobs: the optimizer's row estimate for the filter, nothing run
      EXPLAIN SELECT 1 FROM ${this.db.t.jobs} ${w.where}`;
    const [r] = await this.db.one('estimateMatchingJobs', (q) => run(q, sql, w.values));
    if (r?.rows == null) return null;
    const filtered = r.filtered == null ? 100 : Number(r.filtered);
    return Number(r.rows) * filtered / 100;
  }

  async idRange(): Promise<{ min: bigint; max: bigint } | null> {
    const sql = `-- leasehold jobIdRange: the smallest and largest job id (the primary key's two ends)
      SELECT (SELECT MIN(id) FROM ${this.db.t.jobs}) AS lo, (SELECT MAX(id) FROM ${this.db.t.jobs}) AS hi`;
    const [r] = await this.db.one('jobIdRange', (c) => run(c, sql));
    return r?.lo == null || r.hi == null ? null : { min: BigInt(String(r.lo)), max: BigInt(String(r.hi)) };
  }

  async groups(statuses: readonly JobStatus[]): Promise<JobCount[]> {
    // one statement per status, a range of the claim index (status first, queue and type in it:
    // no row is read), run side by side on the pool: the largest status alone sets the time
    const sql = `-- leasehold summarizeJobs: jobs of one status by queue and type, with how many are due
      SELECT queue, type, status, COUNT(*) AS n, SUM(status IN ('queued', 'failed') AND run_at <= ${NOW}) AS due
      FROM ${this.db.t.jobs} WHERE status = ? GROUP BY queue, type, status`;
    const arms = await Promise.all(statuses.map((status) => this.db.one('summarizeJobs', (q) => run(q, sql, [status]))));
    const rows = arms.flat().map((r) => ({ queue: String(r.queue), type: String(r.type), status: String(r.status) as JobStatus, count: Number(r.n), due: Number(r.due ?? 0) }));
    return rows.sort((a, b) => cmp(a.queue, b.queue) || cmp(a.type, b.type) || cmp(a.status, b.status));
  }
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
