/**
 * Fenced finishes on MySQL/MariaDB, a whole batch in a bounded number of statements:
 *
 * 1. SELECT … FOR UPDATE of the batch's jobs in id order: the rows are
 *    locked in one order by every finisher (no deadlock between batches), and the read says
 *    which items land: the first item per job whose id, lease token and status 'running' (and,
 *    for the sweeper, an expired lease) match; items later in the batch see that job finished.
 *    It also reads the running attempt the job row holds (worker, attempt number, start).
 * 2. The job rows. Items that end the same way (status, delay, error, …: a batch of successes)
 *    share one single-table UPDATE … WHERE (id, lease_token) IN (…) AND status = 'running'; the
 *    GROUPED largest such groups get one each, and whatever is left goes into one UPDATE joined
 *    to a JSON_TABLE of per-item values. (The join costs the server about twice as much per row
 *    as the plain UPDATE: MariaDB buffers a multi-table update's rows before writing them.)
 * 3. The attempt rows of the landed items: one INSERT writes them all (a claim writes none), with
 *    the values step 1 read under the row lock; a row that a schema-2 claim opened for the same
 *    lease is closed in place (ON DUPLICATE KEY UPDATE).
 *
 * Steps 2 and 3 go out together with COMMIT (mysql-tx.ts): with BEGIN riding on step 1, a batch
 * is two round trips.
 */
import type { FinishParams, FinishResult } from '../../core/storage.js';
import type { Queryable, ResultHeader, Row } from './mysql-db.js';
import { idParam, micros, parseUtc, run } from './mysql-db.js';
import type { Stmt } from './mysql-tx.js';
import { runLast } from './mysql-tx.js';
import type { MysqlSql } from './mysql-sql.js';

/** Ids are BIGINT UNSIGNED: anything larger names no job. */
const MAX_ID = 2n ** 64n - 1n;
/** lease_token is VARCHAR(64): a longer token matches no lease. */
const MAX_TOKEN = 64;
/** Groups of like items written by their own plain UPDATE; the rest share one JSON_TABLE join. */
const GROUPED = 2;

/** A landing item with its values, as the statements bind them. */
interface Landing {
  index: number;
  id: bigint;
  token: string;
  /** status, terminal, expired-only, run-after µs, uncount, has-error, error code, error message */
  job: [string, 0 | 1, 0 | 1, number | null, 0 | 1, 0 | 1, string | null, string | null];
  /** outcome, error code, message, stack, retry delay */
  attempt: [string, string | null, string | null, string | null, number | null];
}

/** A landing item that the lock read let through, with the running attempt the job row held. */
interface Landed extends Landing {
  /** attempt number, worker, started_at (the DATETIME(6) text as read: exact to the µs) */
  running: { attempt: number; worker: string; startedAt: string };
}

/** What the lock read let through, and the finish's now (the database's, as DATETIME(6) text). */
interface Fenced {
  landed: Landed[];
  now: string;
}

function landingOf(index: number, id: bigint, f: FinishParams): Landing {
  const err = f.attempt.error ?? null;
  const terminal = f.status === 'succeeded' || f.status === 'dead' || f.status === 'cancelled';
  const runAfter = f.runAfterMs !== undefined && f.runAfterMs !== null ? micros(f.runAfterMs) : null;
  return {
    index,
    id,
    token: f.leaseToken,
    job: [f.status, terminal ? 1 : 0, f.onlyIfExpired === true ? 1 : 0, runAfter, f.uncountAttempt ? 1 : 0, f.error ? 1 : 0, f.error?.code ?? null, f.error?.message ?? null],
    attempt: [f.attempt.outcome, err?.code ?? null, err?.message ?? null, err?.stack ?? null, f.attempt.retryDelayMs ?? null],
  };
}

/** Fenced finishes on `c` (inside a transaction); results in input order. */
export async function finishOn(c: Queryable, sql: MysqlSql, items: readonly FinishParams[]): Promise<FinishResult[]> {
  const results: FinishResult[] = items.map((f) => ({ id: f.id, applied: false }));
  const candidates: Landing[] = [];
  items.forEach((f, i) => {
    const id = idParam(f.id);
    if (id !== null && id <= MAX_ID && f.leaseToken.length <= MAX_TOKEN) candidates.push(landingOf(i, id, f));
  });
  if (candidates.length === 0) return results;
  const { landed: landing, now } = await lockAndFence(c, sql, items, candidates);
  if (landing.length === 0) return results;
  const jobStmts = jobStatements(sql, landing, now);
  const done = await runLast(c, [...jobStmts, attemptStatement(sql, landing, now)]);
  const finished = done.slice(0, jobStmts.length).reduce((n: number, r) => n + (r as ResultHeader).affectedRows, 0);
  // the rows were locked by the lock read, so the fenced UPDATEs land exactly the items it chose
  if (finished !== landing.length) throw new Error(`mysql finishJobs: ${finished} of ${landing.length} locked jobs finished`);
  for (const l of landing) results[l.index]!.applied = true;
  return results;
}

/** Lock the candidates' jobs in id order; the items that land, in input order. */
async function lockAndFence(c: Queryable, sql: MysqlSql, items: readonly FinishParams[], candidates: readonly Landing[]): Promise<Fenced> {
  const state = new Map<bigint, Row>();
  const rows = await run(c, sql.finishLock, [[...new Set(candidates.map((l) => l.id))]]);
  for (const r of rows) state.set(BigInt(String(r.id)), r);
  const landed: Landed[] = [];
  for (const l of candidates) {
    const r = state.get(l.id);
    if (!r || r.status !== 'running' || r.lease_token !== l.token) continue;
    if (items[l.index]!.onlyIfExpired === true && Number(r.expired) !== 1) continue;
    // later items for the same job see it finished
    state.delete(l.id);
    landed.push({ ...l, running: { attempt: Number(r.attempts), worker: String(r.locked_by), startedAt: String(r.started_at) } });
  }
  return { landed, now: String(rows[0]?.db_now) };
}

/** Items sharing the same values, largest group first. */
function groupsBy(landing: readonly Landing[], key: (l: Landing) => unknown[]): Landing[][] {
  const groups = new Map<string, Landing[]>();
  for (const l of landing) {
    const k = JSON.stringify(key(l));
    const g = groups.get(k);
    if (g) g.push(l);
    else groups.set(k, [l]);
  }
  return [...groups.values()].sort((a, b) => b.length - a.length);
}

/** The leftovers as the JSON_TABLE in mysql-sql-jobs.ts reads them; absent keys read as NULL. */
function jsonBatch(rest: readonly Landing[]): string {
  return JSON.stringify(
    rest.map(({ id, token, job: [s, f, x, r, u, e, ec, em] }) => ({
      i: String(id), t: token, s, f, x, r: r ?? undefined, u, e, ec: ec ?? undefined, em: em ?? undefined,
    })),
  );
}

/** Step 2: the job rows' UPDATEs, at the finish's `now`. */
function jobStatements(sql: MysqlSql, landing: readonly Landing[], now: string): Stmt[] {
  const groups = groupsBy(landing, (l) => l.job);
  const stmts: Stmt[] = groups.slice(0, GROUPED).map((g) => {
    const [s, f, x, r, u, e, ec, em] = g[0]!.job;
    return { sql: sql.finishGroup, values: [s, f, now, now, now, r, u, e, ec, e, em, g.map((l) => l.id), g.map((l) => [l.id, l.token]), x] };
  });
  const rest = groups.slice(GROUPED).flat();
  if (rest.length > 0) stmts.push({ sql: sql.finishJobs, values: [jsonBatch(rest), now, now, now] });
  return stmts;
}

/** Step 3: the attempt rows' INSERT, one row per landed item, values in ATTEMPT_ROW's order. */
function attemptStatement(sql: MysqlSql, landed: readonly Landed[], now: string): Stmt {
  // whole ms between the ms-truncated times: what `finishedAt - startedAt` of the Dates read back gives
  const endMs = parseUtc(now).getTime();
  return {
    sql: sql.insertAttempts(landed.length),
    values: landed.flatMap(({ id, token, running: r, attempt }) => [id, r.attempt, r.worker, token, r.startedAt, now, endMs - parseUtc(r.startedAt).getTime(), ...attempt]),
  };
}
