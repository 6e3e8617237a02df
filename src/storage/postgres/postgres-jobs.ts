/**
 * Claim, heartbeat and the sweeper's lookup of expired leases on PostgreSQL (insert:
 * postgres-insert.ts, finish: postgres-finish.ts). Plain functions over the pool that
 * PostgresStorage delegates to; the SQL is in postgres-sql-jobs.ts, the functions behind the
 * prepared claim and heartbeat in postgres-functions.ts.
 */
import { randomBytes } from 'node:crypto';
import type { ClaimedJob, ClaimParams, ExpiredLease, ExpiredLeaseQuery, HeartbeatParams, HeartbeatResult, LeaseRef } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { ClaimBases } from './postgres-claim-bases.js';
import { query, type Prepared } from './postgres-db.js';
import { toClaimedJob, toExpiredLease, validId, type Queryable } from './postgres-rows.js';
import type { jobsSql } from './postgres-sql-jobs.js';

type JobsSql = ReturnType<typeof jobsSql>;

/** `bases` hears which worker claimed with which base (for its finishes, postgres-finish.ts). */
export async function claimJobs(db: Queryable, claim: Prepared, bases: ClaimBases, p: ClaimParams): Promise<ClaimedJob[]> {
  if (p.limit <= 0 || p.types.length === 0) return [];
  // a fresh base per claim; each job's token is the base and its id (see claimWithBase).
  // 128 bits in base64url: 22 characters where hex took 32, and a token is written three
  // times per job (the claimed row, the attempt row and its key)
  const base = randomBytes(16).toString('base64url');
  const params = [p.workerId, [...p.types], p.queues ? [...p.queues] : null, p.limit, p.leaseMs, base];
  const rows = (await query(db, 'claimJobs', claim, params)) as unknown as unknown[][];
  // only claims that leased something: an idle worker's empty polls would push out the bases
  // of leases still running
  if (rows.length > 0) bases.add(base, p.workerId);
  return rows.map((r) => toClaimedJob(r, p.workerId, base));
}

export async function heartbeat(db: Queryable, beat: Prepared, sql: JobsSql, p: HeartbeatParams): Promise<HeartbeatResult> {
  const valid = p.leases.filter((l) => validId(l.id) !== null);
  const lost = new Set<LeaseRef>(p.leases.filter((l) => validId(l.id) === null));
  const status = new Map<string, JobStatus>();
  if (valid.length > 0) {
    const rows = await query(db, 'heartbeat', beat, [valid.map((l) => validId(l.id)), valid.map((l) => l.leaseToken), p.leaseMs]);
    const extended = new Set(rows.map((r) => Number(r.ord) - 1));
    const lostValid = valid.filter((_, i) => !extended.has(i));
    for (const l of lostValid) lost.add(l);
    if (lostValid.length > 0) {
      for (const r of await query(db, 'heartbeat', sql.statuses, [lostValid.map((l) => validId(l.id))])) status.set(String(r.id), r.status as JobStatus);
    }
  }
  // in input order; a job that is gone reports null
  return { lost: p.leases.filter((l) => lost.has(l)).map((l) => ({ id: l.id, status: status.get(validId(l.id) ?? '') ?? null })) };
}

export async function findExpiredLeases(db: Queryable, sql: JobsSql, p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
  if (p.limit <= 0 || p.types?.length === 0) return [];
  const rows = await query(db, 'findExpiredLeases', sql.findExpired, [p.limit, p.types === undefined ? null : [...p.types]]);
  return rows.map(toExpiredLease);
}
