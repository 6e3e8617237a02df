/**
 * Token-fenced leases on job rows: claim, heartbeat, finish, and the sweeper's lookup of
 * expired leases. Each write is one statement, atomic on its own; a finish runs on the pool or
 * on the caller's transaction client. Row locks are taken in id order everywhere, so batches
 * over the same rows in different orders wait for each other instead of deadlocking.
 */
import { randomBytes } from 'node:crypto';
import type { JobStatus } from '../../core/status.js';
import type {
  ClaimedJob, ClaimParams, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseRef, LeaseStore,
} from '../../core/storage.js';
import { ClaimBases } from './postgres-claim-bases.js';
import { prepared, query, txClient, type Db, type Queryable, type Row } from './db.js';
import { jobsSql } from './postgres-sql-jobs.js';
import { date, dateOrNull, safeText, strOrNull, toExpiredLease, validId } from './sql.js';

/**
 * The database refusing the named finish itself: undefined_function (a schema before 8) and
 * insufficient_privilege (a role granted only the functions it had before).
 */
const NO_NAMED_FINISH = new Set(['42883', '42501']);

/** A claimed job from a claim row (CLAIM_COLUMNS, as an array); the lease token is the claim's base and the id. */
function toClaimedJob(r: unknown[], workerId: string, base: string): ClaimedJob {
  const startedAt = date(r[10]);
  const id = String(r[0]);
  const job: ClaimedJob = {
    id, queue: String(r[1]), type: String(r[2]), payload: r[3], status: 'running', priority: Number(r[4]), runAt: date(r[5]),
    attempts: Number(r[6]), maxAttempts: Number(r[7]), idempotencyKey: strOrNull(r[8]), lockedBy: workerId,
    leaseToken: `${base}.${id}`, lockedUntil: date(r[9]), heartbeatAt: new Date(startedAt.getTime()), startedAt,
    finishedAt: dateOrNull(r[11]), lastErrorCode: strOrNull(r[12]), lastError: strOrNull(r[13]), timeoutMs: Number(r[14]),
    maxRuntimeMs: Number(r[15]), createdAt: date(r[16]), updatedAt: new Date(startedAt.getTime()),
  };
  // only jobs a schedule enqueued carry their slot
  if (r[17] != null && r[18] != null) {
    job.scheduleName = String(r[17]);
    job.slotAt = date(r[18]);
  }
  return job;
}

/** A finish that `finish_succeeded` lands exactly as `finish_jobs` would: a success and nothing else. */
function plainSuccess(f: FinishParams): boolean {
  return (
    f.status === 'succeeded' && f.attempt.outcome === 'succeeded' && f.attempt.error == null && f.attempt.retryDelayMs == null &&
    f.error == null && f.runAfterMs == null && f.uncountAttempt !== true && f.onlyIfExpired !== true
  );
}

export class PostgresLeases implements LeaseStore {
  private readonly sql: ReturnType<typeof jobsSql>;
  private readonly hot;
  /** which worker made this storage's recent claims, for the finishes of their successes */
  private readonly bases = new ClaimBases();

  constructor(private readonly db: Db) {
    const sql = jobsSql(db.q);
    this.sql = sql;
    this.hot = {
      claim: prepared(sql.claimCall, 'array'), heartbeat: prepared(sql.heartbeatCall), finish: prepared(sql.finishCall),
      finishSucceeded: prepared(sql.finishSucceededCall), finishSucceededBy: prepared(sql.finishSucceededByCall),
    };
  }

  async claim(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.limit <= 0 || p.types.length === 0) return [];
    // a fresh base per claim, 128 bits in base64url; each job's token is the base and its id
    const base = randomBytes(16).toString('base64url');
    const params = [p.workerId, [...p.types], p.queues ? [...p.queues] : null, p.limit, p.leaseMs, base];
    const rows = (await this.db.run('claimJobs', this.hot.claim, params)) as unknown as unknown[][];
    if (rows.length > 0) this.bases.add(base, p.workerId);
    return rows.map((r) => toClaimedJob(r, p.workerId, base));
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    const valid = p.leases.filter((l) => validId(l.id) !== null);
    const lost = new Set<LeaseRef>(p.leases.filter((l) => validId(l.id) === null));
    const status = new Map<string, JobStatus>();
    if (valid.length > 0) {
      const rows = await this.db.run('heartbeat', this.hot.heartbeat, [valid.map((l) => validId(l.id)), valid.map((l) => l.leaseToken), p.leaseMs]);
      const extended = new Set(rows.map((r) => Number(r.ord) - 1));
      const lostValid = valid.filter((_, i) => !extended.has(i));
      for (const l of lostValid) lost.add(l);
      if (lostValid.length > 0) {
        for (const r of await this.db.run('heartbeat', this.sql.statuses, [lostValid.map((l) => validId(l.id))])) status.set(String(r.id), r.status as JobStatus);
      }
    }
    // in input order; a job that is gone reports null
    return { lost: p.leases.filter((l) => lost.has(l)).map((l) => ({ id: l.id, status: status.get(validId(l.id) ?? '') ?? null })) };
  }

  async finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    const tx = txClient(p.tx);
    const on = tx ?? this.db.pool;
    const items = p.items.filter((f) => validId(f.id) !== null);
    const applied = new Map<FinishParams, boolean>();
    if (items.length > 0 && items.every(plainSuccess)) {
      const rows = await this.finishSucceeded(on, tx ? undefined : this.bases, items.map((f) => validId(f.id)), items.map((f) => f.leaseToken));
      for (const r of rows) applied.set(items[Number(r.ord) - 1] as FinishParams, true);
    } else if (items.length > 0) {
      // optional columns go as [] when no item has a value: unnest pads a shorter array with NULLs, read as "none" / false
      const opt = <T>(f: (x: FinishParams) => T | null | undefined): (T | null)[] => {
        const out = items.map((x) => f(x) ?? null);
        return out.some((v) => v !== null && v !== false) ? out : [];
      };
      const args = [
        items.map((f) => validId(f.id)), items.map((f) => f.leaseToken), items.map((f) => f.status),
        opt((f) => f.runAfterMs ?? null), opt((f) => f.uncountAttempt === true),
        opt((f) => f.error != null), opt((f) => safeText(f.error?.code)), opt((f) => safeText(f.error?.message)),
        items.map((f) => f.attempt.outcome), opt((f) => safeText(f.attempt.error?.code)),
        opt((f) => safeText(f.attempt.error?.message)), opt((f) => safeText(f.attempt.error?.stack)),
        opt((f) => f.attempt.retryDelayMs ?? null), opt((f) => f.onlyIfExpired === true),
        ...this.db.notify,
      ];
      for (const r of await query(on, 'finishJobs', this.hot.finish, args)) applied.set(items[Number(r.ord) - 1] as FinishParams, true);
    }
    return p.items.map((f) => ({ id: f.id, applied: applied.get(f) ?? false }));
  }

  /** A batch of successes: named for their worker where `bases` knows it, else read back. */
  private async finishSucceeded(on: Queryable, bases: ClaimBases | undefined, ids: unknown[], tokens: string[]): Promise<Row[]> {
    const worker = bases?.workerOf(tokens);
    if (bases && worker !== undefined) {
      try {
        return await query(on, 'finishJobs', this.hot.finishSucceededBy, [ids, tokens, worker]);
      } catch (e) {
        if (!NO_NAMED_FINISH.has(String((e as { cause?: { code?: unknown } }).cause?.code))) throw e;
        bases.unnamed();
      }
    }
    return query(on, 'finishJobs', this.hot.finishSucceeded, [ids, tokens]);
  }

  async findExpired(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    if (p.limit <= 0 || p.types?.length === 0) return [];
    const rows = await this.db.run('findExpiredLeases', this.sql.findExpired, [p.limit, p.types === undefined ? null : [...p.types]]);
    return rows.map(toExpiredLease);
  }
}
