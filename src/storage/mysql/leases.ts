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
 * After a claim that came back short, the next one of the same types and queues first asks a
 * plain read of the claim index whether anything is due: an idle worker's poll is then that one
 * statement, not a transaction. The probe reads committed rows without locks, so it finds at
 * least what the locking claim would (rows locked elsewhere it sees, and the claim skips them).
 * Finishes are in finish.ts.
 */
import { randomBytes } from 'node:crypto';
import type { JobStatus } from '../../core/status.js';
import { type ClaimFilter, type FlowGroup, flowGroups } from '../../core/flow-groups.js';
import type { ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseStore } from '../../core/storage.js';
import { type Db, type Queryable, type Stmt, exec, run, runLast } from './db.js';
import { CLAIM_COLS, NOW, type Row, type Tables, compareClaimOrder, idParam, micros, notPaused, parseUtc, sharedSql, toJobRow } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { addRows, flowSql, planLimitedClaim } from './flow.js';
import { finishOn, finishSql } from './finish.js';
import { wakeupsOf } from './wakeups.js';

export function leasesSql(t: Tables) {
  const due = (status: string, queues: 'in' | 'except' | 'all'): string => `FROM ${t.jobs} FORCE INDEX (${t.jobs}_claim)
        WHERE status = '${status}' AND run_at <= ${NOW} AND type IN (?)${queues === 'in' ? ' AND queue IN (?)' : queues === 'except' ? ' AND queue NOT IN (?)' : ''} AND ${notPaused(t)}`;
  const scan = (status: string, queues: 'in' | 'except' | 'all'): string => `(SELECT ${CLAIM_COLS}, ${NOW} AS db_now ${due(status, queues)}
        ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)`;
  return {
    ...sharedSql(t),
    flow: flowSql(t),
    // one index-ordered scan per due status (an IN over both would sort every due row and lock
    // them all); in one statement, so they share one now, returned with the rows
    claimCandidates: (queues: 'in' | 'except' | 'all'): string => `-- leasehold claimJobs: lock up to N due queued and N due failed jobs of unpaused queues${queues === 'except' ? ' but some' : ''} in claim order, skipping locked rows
      ${scan('queued', queues)} UNION ALL ${scan('failed', queues)}`,
    claimProbe: (queues: 'in' | 'all'): string => `-- leasehold claimProbe: whether a due queued or failed job of unpaused queues waits, read from the claim index without locks or a transaction
      SELECT EXISTS (SELECT 1 ${due('queued', queues)}) OR EXISTS (SELECT 1 ${due('failed', queues)}) AS due`,
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
    finish: finishSql(t),
  };
}

type LeasesSql = ReturnType<typeof leasesSql>;

/** How many filters' "last claim came back short" a storage remembers (workers pass the same few). */
const SHORT_KEPT = 64;

export class MysqlLeases extends SqlAggregate<Db, LeasesSql> implements LeaseStore {
  /** the types and queues whose last claim came back short: the next asks the probe first */
  readonly #short = new Set<string>();

  constructor(db: Db) {
    super(db, leasesSql(db.t));
  }

  /** Without limits, one transaction; else each limited group in one of its own (flow.ts), then the free part with what is left of `limit`. */
  async claim(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.limit <= 0 || p.types.length === 0 || (p.queues !== null && p.queues.length === 0)) return [];
    const key = JSON.stringify([p.types, p.queues]);
    if (this.#short.has(key) && !(await this.#anyDue(p))) return [];
    const { limited, free } = flowGroups(p);
    const jobs = limited.length > 0 ? await this.#claimWithFlow(p, limited, free) : free ? await this.#claimDue(p, free, p.limit) : [];
    if (jobs.length === p.limit) this.#short.delete(key);
    else {
      if (this.#short.size >= SHORT_KEPT) this.#short.clear();
      this.#short.add(key);
    }
    return jobs;
  }

  /** The probe: one plain read, outside any transaction. */
  async #anyDue(p: ClaimParams): Promise<boolean> {
    const filter: unknown[] = p.queues === null ? [p.types] : [p.types, p.queues];
    const [row] = await this.db.one('claimJobs', (c) => run(c, this.sql.claimProbe(p.queues === null ? 'all' : 'in'), [...filter, ...filter]));
    return Number(row?.due) === 1;
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
  async finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    if (p.tx !== undefined && p.tx !== null) {
      // the commit is the caller's: the poll finds what it makes due (wakeups.ts)
      return (await this.db.onCaller(p.tx, 'finishJobs', (c) => finishOn(c, this.sql.finish, p.items))).results;
    }
    if (p.items.length === 0) return [];
    const out = await this.db.tx('finishJobs', (c) => finishOn(c, this.sql.finish, p.items), true);
    if (out.due) wakeupsOf(this.db).jobsDue();
    return out.results;
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
