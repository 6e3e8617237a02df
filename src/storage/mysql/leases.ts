/**
 * Token-fenced leases on MySQL/MariaDB: claim, heartbeat, finish, and the sweeper's query.
 *
 * A claim writes no attempt row: the job row holds the running attempt (worker, number, start,
 * lease) until the finish that ends it inserts its history row. Rows that get the same values
 * are one UPDATE over `id IN (…)`; where each row gets its own (claim tokens, finishes ending in
 * different ways) they travel as ONE JSON array that JSON_TABLE turns into a table: the first of
 * a STRAIGHT_JOIN, so each of its rows finds its job by primary key whatever the statistics say,
 * and in the UPDATE's table list, not a derived table, which MariaDB would materialise.
 * `(id, lease_token) IN (…)` comes with a plain `id IN (…)`: alone, the row IN is often planned
 * as a scan, and an UPDATE that scans locks every row it reads. Paused queues are left out by
 * the claim's own statement; types and queues with flow limits are claimed as flow.ts plans.
 */
import { randomBytes } from 'node:crypto';
import type { JobStatus } from '../../core/status.js';
import { type ClaimFilter, type FlowGroup, flowGroups } from '../../core/flow-groups.js';
import type { ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseStore } from '../../core/storage.js';
import { type Db, type Queryable, type ResultHeader, type Stmt, exec, run, runLast } from './db.js';
import { CLAIM_COLS, NOW, type Row, type Tables, compareClaimOrder, idParam, micros, notPaused, parseUtc, sharedSql, toJobRow, waitMs } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { addRows, flowSql, planLimitedClaim } from './flow.js';
import { resultsStatement, settleBatches, settleChildren, workflowsSql } from './workflows.js';

/** Finishes ending in different ways, one JSON object per item (jsonBatch); absent keys read as NULL. */
const FINISH_ITEMS = `JSON_TABLE(?, '$[*]' COLUMNS (
    id BIGINT UNSIGNED PATH '$.i', token VARCHAR(64) PATH '$.t', status VARCHAR(16) PATH '$.s', terminal INT PATH '$.f',
    expired_only INT PATH '$.x', run_after BIGINT PATH '$.r', uncount INT PATH '$.u', has_error INT PATH '$.e',
    error_code TEXT PATH '$.ec', error_message TEXT PATH '$.em')) AS v`;

export function leasesSql(t: Tables) {
  const scan = (status: string, queues: 'in' | 'except' | 'all'): string => `(SELECT ${CLAIM_COLS}, ${NOW} AS db_now FROM ${t.jobs} FORCE INDEX (${t.jobs}_claim)
        WHERE status = '${status}' AND run_at <= ${NOW} AND type IN (?)${queues === 'in' ? ' AND queue IN (?)' : queues === 'except' ? ' AND queue NOT IN (?)' : ''} AND ${notPaused(t)}
        ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)`;
  return {
    ...sharedSql(t),
    flow: flowSql(t),
    // one index-ordered scan per due status (an IN over both would sort every due row and lock
    // them all); in one statement, so they share one now, returned with the rows
    claimCandidates: (queues: 'in' | 'except' | 'all'): string => `-- leasehold claimJobs: lock up to N due queued and N due failed jobs of unpaused queues${queues === 'except' ? ' but some' : ''} in claim order, skipping locked rows
      ${scan('queued', queues)} UNION ALL ${scan('failed', queues)}`,
    claimUpdate: `-- leasehold claimJobs: lease the locked rows (own token each, deadline, one more attempt)
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$[0]', token VARCHAR(64) PATH '$[1]')) AS v
        STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.status = 'running', j.locked_by = ?, j.lease_token = v.token,
        j.locked_until = CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, j.heartbeat_at = CAST(? AS DATETIME(6)),
        j.started_at = CAST(? AS DATETIME(6)), j.attempts = j.attempts + 1, j.updated_at = CAST(? AS DATETIME(6))`,
    heartbeat: `-- leasehold heartbeat: extend the leases still held (id + token + running)
      UPDATE ${t.jobs} FORCE INDEX (PRIMARY) SET locked_until = ${NOW} + INTERVAL ? MICROSECOND, heartbeat_at = ${NOW}, updated_at = ${NOW}
      WHERE id IN (?) AND (id, lease_token) IN (?) AND status = 'running'`,
    leaseState: `-- leasehold heartbeat: status and token of jobs whose lease may be lost
      SELECT id, status, lease_token FROM ${t.jobs} WHERE id IN (?)`,
    expiredLeases: (byType: boolean): string => `-- leasehold findExpiredLeases: running jobs whose lease expired${byType ? ' of these types' : ''}, oldest deadline first
      SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM ${t.jobs} FORCE INDEX (${t.jobs}_sweep)
      WHERE status = 'running' AND locked_until < ${NOW}${byType ? ' AND type IN (?)' : ''} ORDER BY locked_until, id LIMIT ?`,
    // in id order (the JSON array's, sorted), as every finisher locks them (no deadlock between
    // batches); by primary key, as MariaDB turns an IN of 1000+ ids into a join that locks every
    // row it scans; `db_now` is the finish's time, written as the job's and the attempt's finished_at
    finishLock: `-- leasehold finishJobs: lock the batch's jobs in id order and read their lease and running attempt
      SELECT j.id, j.lease_token, j.status, j.locked_until < ${NOW} AS expired, j.locked_by, j.attempts, j.started_at, j.run_at, j.dependents, j.batch_id, ${NOW} AS db_now
      FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$')) AS v STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id FOR UPDATE`,
    finishGroup: `-- leasehold finishJobs: fenced finish of jobs ending the same way (id + lease_token + running), at the finish's now
      UPDATE ${t.jobs} FORCE INDEX (PRIMARY) SET status = ?, locked_by = NULL, lease_token = NULL, locked_until = NULL,
        finished_at = IF(? = 1, CAST(? AS DATETIME(6)), NULL), updated_at = CAST(? AS DATETIME(6)),
        run_at = COALESCE(CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, run_at),
        attempts = IF(? = 1, GREATEST(attempts - 1, 0), attempts),
        last_error_code = IF(? = 1, ?, last_error_code), last_error = IF(? = 1, ?, last_error)
      WHERE id IN (?) AND (id, lease_token) IN (?) AND status = 'running' AND (? = 0 OR locked_until < ${NOW})`,
    finishJobs: `-- leasehold finishJobs: fenced finish of jobs ending in different ways (id + lease_token + running), at the finish's now
      UPDATE ${FINISH_ITEMS} STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.status = v.status, j.locked_by = NULL, j.lease_token = NULL, j.locked_until = NULL,
        j.finished_at = IF(v.terminal = 1, CAST(? AS DATETIME(6)), NULL), j.updated_at = CAST(? AS DATETIME(6)),
        j.run_at = IF(v.run_after IS NULL, j.run_at, CAST(? AS DATETIME(6)) + INTERVAL v.run_after MICROSECOND),
        j.attempts = IF(v.uncount = 1, GREATEST(j.attempts - 1, 0), j.attempts),
        j.last_error_code = IF(v.has_error = 1, v.error_code, j.last_error_code),
        j.last_error = IF(v.has_error = 1, v.error_message, j.last_error)
      WHERE CAST(j.lease_token AS BINARY) = CAST(v.token AS BINARY) AND j.status = 'running' AND (v.expired_only = 0 OR j.locked_until < ${NOW})`,
    workflows: workflowsSql(t),
  };
}

type LeasesSql = ReturnType<typeof leasesSql>;

export class MysqlLeases extends SqlAggregate<Db, LeasesSql> implements LeaseStore {
  constructor(db: Db) {
    super(db, leasesSql(db.t));
  }

  /** Without limits, one transaction; else each limited group in one of its own (flow.ts), then the free part with what is left of `limit`. */
  claim(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.limit <= 0 || p.types.length === 0 || (p.queues !== null && p.queues.length === 0)) return Promise.resolve([]);
    const { limited, free } = flowGroups(p);
    if (limited.length === 0) return free ? this.#claimDue(p, free, p.limit) : Promise.resolve([]);
    return this.#claimWithFlow(p, limited, free);
  }

  async #claimWithFlow(p: ClaimParams, limited: readonly FlowGroup[], free: ClaimFilter | null): Promise<ClaimedJob[]> {
    const out: ClaimedJob[] = [];
    for (const g of limited) {
      if (out.length >= p.limit) break;
      out.push(...(await this.#claimLimited(p, g, p.limit - out.length)));
    }
    if (free && out.length < p.limit) out.push(...(await this.#claimDue(p, free, p.limit - out.length)));
    return out;
  }

  /**
   * READ COMMITTED (no gap locks): one statement locks up to `limit` due rows of each due status
   * and reads the database's now; merged in claim order, the picked rows are leased by one UPDATE
   * sent with COMMIT. It writes exactly the values the claimed jobs are built from, so nothing is
   * read back. Rows scanned but not picked stay locked until COMMIT, unchanged.
   */
  #claimDue(p: ClaimParams, f: ClaimFilter, limit: number): Promise<ClaimedJob[]> {
    const queues = f.queues !== null ? 'in' : f.exceptQueues.length > 0 ? 'except' : 'all';
    return this.db.tx('claimJobs', async (c) => {
      const scan: unknown[] = [f.types, ...(queues === 'in' ? [f.queues] : queues === 'except' ? [f.exceptQueues] : []), limit];
      const candidates = await run(c, this.sql.claimCandidates(queues), [...scan, ...scan]);
      const picked = candidates.sort(compareClaimOrder).slice(0, limit);
      return picked.length === 0 ? [] : leaseRows(c, this.sql, p, picked, String(picked[0]!.db_now), []);
    }, true);
  }

  /** The group's plan and the leases it picks, with the buckets it spent, in one READ COMMITTED transaction; its missing flow rows made first, on their own. */
  async #claimLimited(p: ClaimParams, group: FlowGroup, limit: number): Promise<ClaimedJob[]> {
    const once = () => this.db.tx('claimLimited', async (c) => {
      const plan = await planLimitedClaim(c, this.sql.flow, group, limit);
      return plan === null ? null : plan.picked.length === 0 ? [] : leaseRows(c, this.sql, p, plan.picked, plan.now, plan.writes);
    }, true);
    const got = await once();
    if (got !== null) return got;
    const add = addRows(this.sql.flow, group);
    // outside the claim's transaction: a claim never waits for a row while holding another
    await this.db.autocommit('claimLimited', (c) => exec(c, add.sql, add.values));
    return (await once()) ?? [];
  }

  /** One UPDATE; when it touched every lease asked about, all are held, else the others' status says why they are lost. */
  heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    if (p.leases.length === 0) return Promise.resolve({ lost: [] });
    return this.db.one('heartbeat', async (c) => {
      const leases = p.leases.map((l) => ({ ...l, idp: idParam(l.id) }));
      const valid = leases.filter((l) => l.idp !== null);
      if (valid.length === 0) return { lost: leases.map((l) => ({ id: l.id, status: null })) };
      const res = await exec(c, this.sql.heartbeat, [micros(p.leaseMs), valid.map((l) => l.idp), valid.map((l) => [l.idp, l.leaseToken])]);
      const distinct = new Set(valid.map((l) => `${String(l.idp)}:${l.leaseToken}`)).size;
      if (valid.length === leases.length && res.affectedRows === distinct) return { lost: [] };
      const state = new Map((await run(c, this.sql.leaseState, [valid.map((l) => l.idp)])).map((r) => [String(r.id), r]));
      const held = (l: (typeof leases)[number], r: Row | undefined): boolean => r?.status === 'running' && r.lease_token === l.leaseToken;
      return {
        lost: leases.flatMap((l) => {
          const r = l.idp === null ? undefined : state.get(String(l.idp));
          return held(l, r) ? [] : [{ id: l.id, status: r ? (String(r.status) as JobStatus) : null }];
        }),
      };
    });
  }

  /** READ COMMITTED: every read is a locking read of the batch's own rows, so no gap locks make claimers wait for this commit. */
  finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    if (p.tx !== undefined && p.tx !== null) return this.db.onCaller(p.tx, 'finishJobs', (c) => finishOn(c, this.sql, p.items));
    if (p.items.length === 0) return Promise.resolve([]);
    return this.db.tx('finishJobs', (c) => finishOn(c, this.sql, p.items), true);
  }

  async findExpired(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    if (p.limit <= 0 || p.types?.length === 0) return [];
    const values = p.types === undefined ? [p.limit] : [[...p.types], p.limit];
    const rows = await this.db.one('findExpiredLeases', (c) => run(c, this.sql.expiredLeases(p.types !== undefined), values));
    return rows.map((r) => ({
      id: String(r.id), type: String(r.type), leaseToken: String(r.lease_token), lockedBy: r.locked_by === null ? null : String(r.locked_by),
      attempts: Number(r.attempts), maxAttempts: Number(r.max_attempts),
    }));
  }
}

/**
 * Lease `picked` (due rows this transaction locked, in claim order) at the claim's `now`: one
 * UPDATE, after `before`, sent with COMMIT; the claimed jobs are built from what it wrote.
 */
async function leaseRows(c: Queryable, sql: LeasesSql, p: ClaimParams, picked: readonly Row[], now: string, before: readonly Stmt[]): Promise<ClaimedJob[]> {
  const hex = randomBytes(16 * picked.length).toString('hex');
  const tokens = picked.map((_, k) => hex.slice(32 * k, 32 * k + 32));
  const leaseUs = micros(p.leaseMs);
  const lease = JSON.stringify(picked.map((r, k) => [String(r.id), tokens[k]]));
  await runLast(c, [...before, { sql: sql.claimUpdate, values: [lease, p.workerId, now, leaseUs, now, now, now] }]);
  const nowMs = parseUtc(now).getTime();
  // now (µs) + the lease (µs) in whole ms, as the database's DATETIME(6) reads back
  const untilMs = Math.floor((nowMs * 1000 + Number(now.slice(23, 26).padEnd(3, '0')) + leaseUs) / 1000);
  return picked.map((r, k) => toJobRow({
    ...r, status: 'running', attempts: Number(r.attempts) + 1, locked_by: p.workerId, lease_token: tokens[k],
    locked_until: new Date(untilMs), heartbeat_at: new Date(nowMs), started_at: new Date(nowMs), updated_at: new Date(nowMs),
  }) as ClaimedJob);
}

// ---- finish --------------------------------------------------------------------------------
// 1. finishLock: the batch's jobs locked in id order; the read says which items land (the first
//    item per job whose lease matches; later items see the job finished) and the running attempt.
// 2. The job rows: the GROUPED largest groups of items ending the same way get a plain UPDATE
//    each; the rest share one UPDATE joined to a JSON_TABLE (MariaDB buffers a multi-table
//    update's rows: dearer per row). 3. One INSERT of the landed attempts' history rows.
//    2 and 3 go out with COMMIT: with BEGIN riding on 1, a batch is two round trips.

/** Ids are BIGINT UNSIGNED, lease_token VARCHAR(64): beyond those, an item names no lease. */
const MAX_ID = 2n ** 64n - 1n;
const MAX_TOKEN = 64;
const GROUPED = 2;

/** A landing item: status, terminal, expired-only, run-after µs, uncount, has-error, error code, message; then the attempt's outcome, error code, message, stack, retry delay. */
interface Landing {
  index: number;
  id: bigint;
  token: string;
  job: [string, 0 | 1, 0 | 1, number | null, 0 | 1, 0 | 1, string | null, string | null];
  attempt: [string, string | null, string | null, string | null, number | null];
  /** attempt number, worker, started_at (the DATETIME(6) text as read: exact to the µs), wait ms, once the lock read let it through */
  running?: [number, string, string, number];
}

function landingOf(index: number, id: bigint, f: FinishParams): Landing {
  const err = f.attempt.error ?? null;
  const terminal = f.status === 'succeeded' || f.status === 'dead' || f.status === 'cancelled';
  const runAfter = f.runAfterMs !== undefined && f.runAfterMs !== null ? micros(f.runAfterMs) : null;
  return {
    index, id, token: f.leaseToken,
    job: [f.status, terminal ? 1 : 0, f.onlyIfExpired === true ? 1 : 0, runAfter, f.uncountAttempt ? 1 : 0, f.error ? 1 : 0, f.error?.code ?? null, f.error?.message ?? null],
    attempt: [f.attempt.outcome, err?.code ?? null, err?.message ?? null, err?.stack ?? null, f.attempt.retryDelayMs ?? null],
  };
}

/** Fenced finishes on `c` (inside a transaction); results in input order. */
async function finishOn(c: Queryable, sql: LeasesSql, items: readonly FinishParams[]): Promise<FinishResult[]> {
  const results: FinishResult[] = items.map((f) => ({ id: f.id, applied: false }));
  const candidates = items.flatMap((f, i) => {
    const id = idParam(f.id);
    return id !== null && id <= MAX_ID && f.leaseToken.length <= MAX_TOKEN ? [landingOf(i, id, f)] : [];
  });
  if (candidates.length === 0) return results;
  const ids = [...new Set(candidates.map((l) => l.id))].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const rows = await run(c, sql.finishLock, [JSON.stringify(ids.map(String))]);
  const state = new Map(rows.map((r) => [BigInt(String(r.id)), r]));
  const parents: { id: bigint; status: FinishParams['status'] }[] = [];
  const members: { batchId: bigint; status: FinishParams['status'] }[] = [];
  const landing = candidates.filter((l) => {
    const r = state.get(l.id);
    if (!r || r.status !== 'running' || r.lease_token !== l.token) return false;
    if (items[l.index]!.onlyIfExpired === true && Number(r.expired) !== 1) return false;
    state.delete(l.id);
    l.running = [Number(r.attempts), String(r.locked_by), String(r.started_at), waitMs(r.run_at, r.started_at)];
    if (r.dependents !== null) parents.push({ id: l.id, status: items[l.index]!.status });
    if (r.batch_id !== null) members.push({ batchId: BigInt(String(r.batch_id)), status: items[l.index]!.status });
    return true;
  });
  if (landing.length === 0) return results;
  const now = String(rows[0]!.db_now);
  const jobStmts = jobStatements(sql, landing, now);
  const landed = landing.map((l) => ({ id: l.id, result: items[l.index]!.result }));
  const settled = parents.length > 0 ? await settleChildren(c, sql.workflows, parents, now, (batchId) => members.push({ batchId, status: 'cancelled' })) : [];
  if (members.length > 0) settled.push(...(await settleBatches(c, sql.workflows, members, now)));
  const done = await runLast(c, [...jobStmts, attemptStatement(sql, landing, now), ...resultsStatement(sql.workflows, landed), ...settled]);
  const finished = done.slice(0, jobStmts.length).reduce((n: number, r) => n + (r as ResultHeader).affectedRows, 0);
  // the rows were locked by the lock read, so the fenced UPDATEs land exactly the items it chose
  if (finished !== landing.length) throw new Error(`mysql finishJobs: ${finished} of ${landing.length} locked jobs finished`);
  for (const l of landing) results[l.index]!.applied = true;
  return results;
}

/** Step 2: the job rows' UPDATEs, at the finish's `now`. */
function jobStatements(sql: LeasesSql, landing: readonly Landing[], now: string): Stmt[] {
  const byJob = new Map<string, Landing[]>();
  for (const l of landing) {
    const k = JSON.stringify(l.job);
    const g = byJob.get(k);
    if (g) g.push(l);
    else byJob.set(k, [l]);
  }
  const groups = [...byJob.values()].sort((a, b) => b.length - a.length);
  const stmts: Stmt[] = groups.slice(0, GROUPED).map((g) => {
    const [s, f, x, r, u, e, ec, em] = g[0]!.job;
    return { sql: sql.finishGroup, values: [s, f, now, now, now, r, u, e, ec, e, em, g.map((l) => l.id), g.map((l) => [l.id, l.token]), x] };
  });
  const rest = groups.slice(GROUPED).flat();
  const json = rest.map(({ id, token, job: [s, f, x, r, u, e, ec, em] }) => ({ i: String(id), t: token, s, f, x, r: r ?? undefined, u, e, ec: ec ?? undefined, em: em ?? undefined }));
  if (rest.length > 0) stmts.push({ sql: sql.finishJobs, values: [JSON.stringify(json), now, now, now] });
  return stmts;
}

/** Step 3: the attempt rows' INSERT, one per landed item; whole ms between the ms-truncated times, as `finishedAt - startedAt` of the Dates read back. */
function attemptStatement(sql: LeasesSql, landed: readonly Landing[], now: string): Stmt {
  const endMs = parseUtc(now).getTime();
  return {
    sql: sql.insertAttempts(landed.length),
    values: landed.flatMap(({ id, token, running, attempt }) => {
      const [n, worker, startedAt, wait] = running!;
      return [id, n, worker, token, startedAt, now, endMs - parseUtc(startedAt).getTime(), ...attempt, wait];
    }),
  };
}
