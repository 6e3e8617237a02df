/**
 * Leases on SQLite, the hot path: claim, heartbeat, finish, and the sweeper's query.
 * - a claim is one UPDATE … RETURNING in autocommit (atomic on its own; it takes the write lock
 *   at its start); the rows handed back are built from the claim's own values plus what the
 *   statement returned, never re-read, and it writes no attempt row (see attempts.ts). A claim
 *   naming a type or queue with limits (`flow`, `queueFlow`) runs in one IMMEDIATE transaction
 *   instead: the limited groups' picks (flow.ts), then the free part through the same statement;
 * - a finish call is one IMMEDIATE transaction: the handlers' plain successes in it are one
 *   statement for all of them (LEASE_SQL.succeed: json_each of their leases, each job read by
 *   its rowid); every other finish, and heartbeats, are cached statements run per item (see
 *   LEASE_SQL.finish). A plain success writes no attempt row: its job row keeps the attempt.
 */
import type { JobStatus } from '../../core/status.js';
import type {
  ClaimedJob, ClaimParams, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseStore,
} from '../../core/storage.js';
import { type ClaimFilter, type FlowGroup, flowGroups } from '../../core/flow-groups.js';
import { ATTEMPT_SQL, keepsAttempt } from './attempts.js';
import { refuseTx } from './db.js';
import { NOT_PAUSED, pickLimited } from './flow.js';
import type { SqliteDb } from './db.js';
import { toExpiredLease, toSqlId } from './sql.js';
import { BatchTally, settleChildren } from './workflows.js';
import type { SqlExpired } from './sql.js';

/**
 * One UPDATE … RETURNING leases the batch. Tokens come from SQLite's randomblob() (its ChaCha20
 * generator, seeded from the OS), so exactly one is made per claimed row. Only the queue filter
 * in use goes into the SQL. RETURNING carries what the caller cannot compute itself (the rest
 * is the claim's own values); its order is unspecified, the caller sorts. `picked`: the ids a
 * flow plan chose (@ids), still due, instead of the claim-order walk. `LIMIT @limit + 0`: SQLite
 * reads a bare parameter's value into this statement's plan, so rebinding it (every claim)
 * would compile the statement again at its next run.
 */
function claimSql(which: 'due' | 'dueByQueue' | 'dueExcept' | 'picked'): string {
  const header = which === 'picked'
    ? 'lease the jobs of @ids (a flow plan\'s picks) that are still due'
    : `lease up to @limit due jobs of @types${which === 'dueByQueue' ? ' in @queues' : which === 'dueExcept' ? ' outside @exceptQueues' : ''} in unpaused queues in claim order`;
  const queueFilter = which === 'dueByQueue' ? '\n        AND queue IN (SELECT value FROM json_each(@queues))' : which === 'dueExcept' ? '\n        AND queue NOT IN (SELECT value FROM json_each(@exceptQueues))' : '';
  const where = which === 'picked'
    ? `id IN (SELECT value FROM json_each(@ids)) AND status IN ('queued','failed') AND run_at <= @now`
    : `id IN (SELECT id FROM {p}jobs
      WHERE status IN ('queued','failed') AND run_at <= @now
        AND type IN (SELECT value FROM json_each(@types))${queueFilter}
        AND ${NOT_PAUSED}
      ORDER BY priority, run_at, id
      LIMIT @limit + 0)`;
  return `-- leasehold leases.claim: ${header}, each with a fresh 128-bit token
    UPDATE {p}jobs
    SET status = 'running', locked_by = @workerId, lease_token = lower(hex(randomblob(16))),
        locked_until = @now + @leaseMs, heartbeat_at = @now, started_at = @now,
        attempts = attempts + 1, updated_at = @now
    WHERE ${where}
    RETURNING id, queue, type, payload, priority, run_at, attempts, max_attempts, idempotency_key,
      finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at,
      schedule_name, slot_at, lease_token, trace_context, concurrency_key, unique_key`;
}
const CLAIM_SQL = claimSql('due');
const CLAIM_BY_QUEUE_SQL = claimSql('dueByQueue');
const CLAIM_EXCEPT_SQL = claimSql('dueExcept');
const CLAIM_PICKED_SQL = claimSql('picked');

/** The lease statements (exported for the plan tests). */
export const LEASE_SQL = {
  heartbeat: `-- leasehold leases.heartbeat: extend one lease that still holds (? = lockedUntil, now, now, id, leaseToken)
    UPDATE {p}jobs SET locked_until = ?, heartbeat_at = ?, updated_at = ?
    WHERE id = ? AND lease_token = ? AND status = 'running'`,
  status: `-- leasehold leases.status: a job's current status (to report a lost lease)
    SELECT status FROM {p}jobs WHERE id = ?`,
  // per item rather than one UPDATE … FROM json_each per batch: SQLite re-parses the JSON item
  // for every ->> it extracts, and this one has a dozen values (the success's three)
  // a success the job row keeps (keepsAttempt) keeps the worker and the token: the row holds that attempt (attempts.ts)
  finish: `-- leasehold leases.finish: fenced finish of one attempt: lands only under the same lease on a running job (? = status, now, runAfterMs, uncount, hasError, errorCode, hasError, errorMessage, keep, keep, finishedAt, now, result, id, leaseToken, onlyIfExpired, now)
    UPDATE {p}jobs
    SET status = ?, run_at = coalesce(? + ?, run_at), attempts = attempts - ?,
        last_error_code = CASE WHEN ? THEN ? ELSE last_error_code END,
        last_error = CASE WHEN ? THEN ? ELSE last_error END,
        locked_by = CASE WHEN ? THEN locked_by END, lease_token = CASE WHEN ? THEN lease_token END,
        locked_until = NULL, finished_at = ?, updated_at = ?, result = ?
    WHERE id = ? AND lease_token = ? AND status = 'running' AND (? = 0 OR locked_until < ?)`,
  // the common finish for a whole write; RETURNING says which landed; worker and token stay, as
  // the attempt's record; +status: each job read by its rowid, never by a walk of the running
  // index however ANALYZE counted it
  succeed: `-- leasehold leases.finish: fenced success of the attempts in @items ([[id, leaseToken, result], …]): each lands only under its lease on a running job, its job row keeping the attempt
    UPDATE {p}jobs
    SET status = 'succeeded', locked_until = NULL, finished_at = @now, updated_at = @now, result = i.value ->> 2
    FROM json_each(@items) AS i
    WHERE {p}jobs.id = i.value ->> 0 AND {p}jobs.lease_token = i.value ->> 1 AND +{p}jobs.status = 'running'
    RETURNING id`,
  // not the finish's RETURNING: SQLite gathers RETURNING rows in a temporary table at every run
  // and journals such a statement, per finished job; this reads the batch's rows once
  workflowOf: `-- leasehold leases.finish: which of the jobs just finished (@ids) a workflow waits on or a batch counts
    SELECT id, dependents, batch_id FROM {p}jobs
    WHERE id IN (SELECT value FROM json_each(@ids)) AND (dependents IS NOT NULL OR batch_id IS NOT NULL)`,
  expired: `-- leasehold leases.expired: running jobs whose lease has expired, of @types when not null, oldest expiry first
    SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM {p}jobs
    WHERE status = 'running' AND locked_until < @now AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
    ORDER BY locked_until, id LIMIT @limit`,
} as const;

/** RETURNING columns of the claim, in order. */
type ClaimRow = [
  id: number, queue: string, type: string, payload: string, priority: number, runAt: number, attempts: number,
  maxAttempts: number, idempotencyKey: string | null, finishedAt: number | null, lastErrorCode: string | null,
  lastError: string | null, timeoutMs: number, maxRuntimeMs: number, createdAt: number,
  scheduleName: string | null, slotAt: number | null, leaseToken: string, traceContext: string | null,
  concurrencyKey: string | null, uniqueKey: string | null,
];

function claimedJob(r: ClaimRow, p: ClaimParams, now: number): ClaimedJob {
  const job: ClaimedJob = {
    id: String(r[0]),
    queue: r[1],
    type: r[2],
    payload: JSON.parse(r[3]),
    status: 'running',
    priority: r[4],
    runAt: new Date(r[5]),
    attempts: r[6],
    maxAttempts: r[7],
    idempotencyKey: r[8],
    lockedBy: p.workerId,
    leaseToken: r[17],
    lockedUntil: new Date(now + p.leaseMs),
    heartbeatAt: new Date(now),
    startedAt: new Date(now),
    finishedAt: r[9] === null ? null : new Date(r[9]),
    lastErrorCode: r[10],
    lastError: r[11],
    timeoutMs: r[12],
    maxRuntimeMs: r[13],
    createdAt: new Date(r[14]),
    updatedAt: new Date(now),
  };
  // only jobs a schedule enqueued carry their slot
  if (r[15] !== null && r[16] !== null) {
    job.scheduleName = r[15];
    job.slotAt = new Date(r[16]);
  }
  if (r[18] !== null) job.traceContext = r[18];
  if (r[19] !== null) job.concurrencyKey = r[19];
  if (r[20] !== null) job.uniqueKey = r[20];
  return job;
}

const TERMINAL: ReadonlySet<string> = new Set(['succeeded', 'dead', 'cancelled']);

/** A handler's success as the worker reports it: the finish whose statements bind only the lease, the time and the result. */
function plainSuccess(f: FinishParams): boolean {
  return f.status === 'succeeded' && f.attempt.outcome === 'succeeded' && f.attempt.error == null && f.attempt.retryDelayMs == null
    && f.error == null && f.runAfterMs === undefined && f.uncountAttempt !== true && f.onlyIfExpired !== true;
}

export class SqliteLeases implements LeaseStore {
  constructor(private readonly db: SqliteDb) {}

  async claim(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.types.length === 0 || p.limit <= 0) return [];
    const db = this.db;
    const now = db.now();
    const { limited, free } = flowGroups(p);
    // without limits one statement, atomic on its own: autocommit
    const rows = limited.length === 0
      ? (free ? db.read(() => this.#claimDue(p, free, p.limit, now)) : [])
      : db.write(() => this.#claimLimited(p, limited, free, now));
    // RETURNING order is unspecified; hand jobs out in claim order (priority, run_at, id)
    rows.sort((a, b) => a[4] - b[4] || a[5] - b[5] || a[0] - b[0]);
    return rows.map((r) => claimedJob(r, p, now));
  }

  #claimDue(p: ClaimParams, f: ClaimFilter, limit: number, now: number): ClaimRow[] {
    const sql = f.queues !== null ? CLAIM_BY_QUEUE_SQL : f.exceptQueues.length > 0 ? CLAIM_EXCEPT_SQL : CLAIM_SQL;
    return this.db.stmt(sql, 'raw').all({
      now, workerId: p.workerId, leaseMs: p.leaseMs, limit, types: JSON.stringify(f.types),
      ...(f.queues !== null ? { queues: JSON.stringify(f.queues) } : f.exceptQueues.length > 0 ? { exceptQueues: JSON.stringify(f.exceptQueues) } : {}),
    }) as ClaimRow[];
  }

  /** Each limited group's picks, leased in turn, then the free part with the rest of the limit; call inside a write transaction. */
  #claimLimited(p: ClaimParams, limited: readonly FlowGroup[], free: ClaimFilter | null, now: number): ClaimRow[] {
    const db = this.db;
    const rows: ClaimRow[] = [];
    for (const g of limited) {
      // leased before the next group's plan, which may count the same type
      const ids = pickLimited(db, g, now, p.limit - rows.length);
      if (ids.length > 0) rows.push(...(db.stmt(CLAIM_PICKED_SQL, 'raw').all({ now, workerId: p.workerId, leaseMs: p.leaseMs, ids: JSON.stringify(ids) }) as ClaimRow[]));
    }
    if (free && rows.length < p.limit) rows.push(...this.#claimDue(p, free, p.limit - rows.length, now));
    return rows;
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    if (p.leases.length === 0) return { lost: [] };
    const db = this.db;
    const now = db.now();
    const until = now + p.leaseMs;
    return db.write(() => {
      const extend = db.stmt(LEASE_SQL.heartbeat);
      const lost: HeartbeatResult['lost'] = [];
      for (const l of p.leases) {
        const id = toSqlId(l.id);
        if (id === null) lost.push({ id: l.id, status: null });
        else if (extend.run(until, now, now, id, l.leaseToken).changes === 0) lost.push({ id: l.id, status: this.statusOf(id) });
      }
      return { lost };
    });
  }

  /**
   * The handlers' plain successes together (`#succeed`), then the rest item by item in input
   * order: the attempt's history row first (ATTEMPT_SQL.end, read from the job row under the
   * same fence; none for a success, whose job row keeps it), then the job row, whose count says
   * whether the item landed. Same fence, same transaction: the history row is written exactly
   * when it lands.
   */
  async finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    refuseTx(p.tx, 'leases.finish');
    if (p.items.length === 0) return [];
    const db = this.db;
    const now = db.now();
    return db.write(() => {
      const landed = new Map<number, string>();
      const ids = p.items.map((f) => toSqlId(f.id));
      // a job's first item only: a later one for the same job must meet the lease the first left
      const seen = new Set<number>();
      const together = p.items.map((f, i) => {
        const id = ids[i] as number | null;
        if (id === null || seen.has(id)) return false;
        seen.add(id);
        return plainSuccess(f);
      });
      const succeeded = together.includes(true) ? this.#succeed(p.items, ids, together, now) : new Set<number>();
      const end = db.stmt(ATTEMPT_SQL.end);
      const finish = db.stmt(LEASE_SQL.finish);
      const results = p.items.map((f, i): FinishResult => {
        const id = ids[i] as number | null;
        if (id === null) return { id: f.id, applied: false };
        if (together[i]) {
          const applied = succeeded.has(id);
          if (applied) landed.set(id, f.status);
          return { id: f.id, applied };
        }
        const expiredOnly = f.onlyIfExpired ? 1 : 0;
        const a = f.attempt.error ?? null;
        // a plain success's job row keeps its attempt (worker and token too): no history row
        const keep = keepsAttempt(f) ? 1 : 0;
        if (!keep) end.run(now, now, f.attempt.outcome, a?.code ?? null, a?.message ?? null, a?.stack ?? null, f.attempt.retryDelayMs ?? null, id, f.leaseToken, expiredOnly, now);
        const e = f.error ?? null;
        const hasError = e === null ? 0 : 1;
        const applied = finish.run(
          f.status, now, f.runAfterMs ?? null, f.uncountAttempt ? 1 : 0, hasError, e?.code ?? null, hasError, e?.message ?? null, keep, keep,
          TERMINAL.has(f.status) ? now : null, now, f.result ?? null, id, f.leaseToken, expiredOnly, now,
        ).changes > 0;
        if (applied) landed.set(id, f.status);
        return { id: f.id, applied };
      });
      if (landed.size > 0) this.#settle(landed, now);
      return results;
    });
  }

  /** The plain successes among `items` (where `together`), in one statement: the ids that landed. */
  #succeed(items: readonly FinishParams[], ids: readonly (number | null)[], together: readonly boolean[], now: number): Set<number> {
    const batch = JSON.stringify(items.flatMap((f, i) => (together[i] ? [[ids[i], f.leaseToken, f.result ?? null]] : [])));
    const rows = this.db.stmt(LEASE_SQL.succeed, 'raw').all({ now, items: batch }) as [id: number][];
    return new Set(rows.map((r) => r[0]));
  }

  /** What the jobs that landed (id → the status they moved to) release: their waiting children and their batches' counts. */
  #settle(landed: ReadonlyMap<number, string>, now: number): void {
    const db = this.db;
    const rows = db.stmt(LEASE_SQL.workflowOf, 'raw').all({ ids: JSON.stringify([...landed.keys()]) }) as [id: number, dependents: number | null, batchId: number | null][];
    if (rows.length === 0) return;
    const tally = new BatchTally();
    for (const [id, dependents, batchId] of rows) {
      const status = landed.get(id) as string;
      if (dependents !== null) settleChildren(db, id, status, now, tally);
      if (batchId !== null) tally.add(batchId, status);
    }
    tally.settle(db, now);
  }

  async findExpired(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    const types = p.types === undefined ? null : JSON.stringify(p.types);
    if (p.limit <= 0) return [];
    const rows = this.db.read(() => this.db.stmt(LEASE_SQL.expired).all({ now: this.db.now(), limit: p.limit, types }) as SqlExpired[]);
    return rows.map(toExpiredLease);
  }

  private statusOf(id: number): JobStatus | null {
    const r = this.db.stmt(LEASE_SQL.status).get(id) as { status: JobStatus } | undefined;
    return r ? r.status : null;
  }
}
