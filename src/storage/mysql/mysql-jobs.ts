/**
 * Claim and heartbeat on MySQL/MariaDB (insert: mysql-insert.ts, finish: mysql-finish.ts).
 * The orchestration is here, the SQL in mysql-sql-jobs.ts.
 */
import { randomBytes } from 'node:crypto';
import type { ClaimParams, ClaimedJob, HeartbeatParams, HeartbeatResult } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { Queryable, Row } from './mysql-db.js';
import { exec, idParam, micros, parseUtc, run } from './mysql-db.js';
import { runLast } from './mysql-tx.js';
import type { MysqlSql } from './mysql-sql.js';

/** Claim order: priority, run_at (DATETIME texts sort as times), id (decimal texts: by length, then by text). */
function compareCandidates(a: Row, b: Row): number {
  const pa = Number(a.priority);
  const pb = Number(b.priority);
  if (pa !== pb) return pa - pb;
  const ra = String(a.run_at);
  const rb = String(b.run_at);
  if (ra !== rb) return ra < rb ? -1 : 1;
  const ia = String(a.id);
  const ib = String(b.id);
  if (ia.length !== ib.length) return ia.length - ib.length;
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

/** A claimed job from its candidate row (CLAIM_COLS) and what the claim set. */
function claimedJob(r: Row, p: ClaimParams, token: string, nowMs: number, untilMs: number): ClaimedJob {
  const job: ClaimedJob = {
    id: String(r.id),
    queue: String(r.queue),
    type: String(r.type),
    payload: JSON.parse(String(r.payload)) as unknown,
    status: 'running',
    priority: Number(r.priority),
    runAt: parseUtc(r.run_at),
    attempts: Number(r.attempts) + 1,
    maxAttempts: Number(r.max_attempts),
    idempotencyKey: r.idempotency_key == null ? null : String(r.idempotency_key),
    lockedBy: p.workerId,
    leaseToken: token,
    lockedUntil: new Date(untilMs),
    heartbeatAt: new Date(nowMs),
    startedAt: new Date(nowMs),
    finishedAt: r.finished_at == null ? null : parseUtc(r.finished_at),
    lastErrorCode: r.last_error_code == null ? null : String(r.last_error_code),
    lastError: r.last_error == null ? null : String(r.last_error),
    timeoutMs: Number(r.timeout_ms),
    maxRuntimeMs: Number(r.max_runtime_ms),
    createdAt: parseUtc(r.created_at),
    updatedAt: new Date(nowMs),
  };
  // only jobs a schedule enqueued carry their slot
  if (r.schedule_name != null && r.slot_at != null) {
    job.scheduleName = String(r.schedule_name);
    job.slotAt = parseUtc(r.slot_at);
  }
  return job;
}

/** Microseconds since the epoch of a DATETIME(6) text ("2024-05-01 12:00:00.123456", UTC). */
function epochMicros(text: string): number {
  return parseUtc(text).getTime() * 1000 + Number(text.slice(23, 26).padEnd(3, '0'));
}

/** n fresh 128-bit tokens as hex, from one call into the CSPRNG. */
function leaseTokens(n: number): string[] {
  const hex = randomBytes(16 * n).toString('hex');
  return Array.from({ length: n }, (_, k) => hex.slice(32 * k, 32 * k + 32));
}

/**
 * Claim inside a READ COMMITTED transaction: one statement locks up to `limit` due rows of each
 * due status (whole rows, and the database's now); merged in claim order, the picked rows are
 * leased by one UPDATE (each its own token, times from that now). The attempt this opens lives
 * in the job row (worker, attempts, lease token, started_at) until the finish that ends it
 * writes its history row (mysql-finish.ts); listAttempts reads it from there. The claimed rows
 * are the scanned rows with the lease applied: the UPDATE writes exactly those values, so no
 * read-back is needed. Rows scanned but not picked stay locked until COMMIT, unchanged. Two
 * round trips: [SET TRANSACTION, BEGIN, scan] and [UPDATE, COMMIT] (mysql-tx.ts).
 */
export async function claimOn(c: Queryable, sql: MysqlSql, p: ClaimParams): Promise<ClaimedJob[]> {
  if (p.limit <= 0 || p.types.length === 0 || (p.queues !== null && p.queues.length === 0)) return [];
  const scan: unknown[] = p.queues === null ? [p.types, p.limit] : [p.types, p.queues, p.limit];
  const candidates = await run(c, sql.claimCandidates(p.queues !== null), [...scan, ...scan]);
  const now = candidates[0] ? String(candidates[0].db_now) : null;
  const picked = candidates.sort(compareCandidates).slice(0, p.limit);
  if (picked.length === 0 || now === null) return [];
  const tokens = leaseTokens(picked.length);
  const leaseUs = micros(p.leaseMs);
  const lease = JSON.stringify(picked.map((r, k) => [String(r.id), tokens[k]]));
  // the rows are locked by the scan, so every one of them is leased: the UPDATE goes out with COMMIT
  await runLast(c, [{ sql: sql.claimUpdate, values: [lease, p.workerId, now, leaseUs, now, now, now] }]);
  const nowMs = parseUtc(now).getTime();
  const untilMs = Math.floor((epochMicros(now) + leaseUs) / 1000);
  return picked.map((r, k) => claimedJob(r, p, tokens[k] as string, nowMs, untilMs));
}

/**
 * Extend held leases (one UPDATE). When it touched every lease asked about, all are held;
 * otherwise read the others' status to report them lost.
 */
export async function heartbeatOn(c: Queryable, sql: MysqlSql, p: HeartbeatParams): Promise<HeartbeatResult> {
  const leases = p.leases.map((l) => ({ ...l, idp: idParam(l.id) }));
  const valid = leases.filter((l) => l.idp !== null);
  if (valid.length === 0) return { lost: leases.map((l) => ({ id: l.id, status: null })) };
  const res = await exec(c, sql.heartbeat, [micros(p.leaseMs), valid.map((l) => l.idp), valid.map((l) => [l.idp, l.leaseToken])]);
  const distinct = new Set(valid.map((l) => `${String(l.idp)}:${l.leaseToken}`)).size;
  if (valid.length === leases.length && res.affectedRows === distinct) return { lost: [] };
  const state = new Map<string, Row>();
  for (const r of await run(c, sql.leaseState, [valid.map((l) => l.idp)])) state.set(String(r.id), r);
  const lost: HeartbeatResult['lost'] = [];
  for (const l of leases) {
    const r = l.idp === null ? undefined : state.get(String(l.idp));
    if (r && r.status === 'running' && r.lease_token === l.leaseToken) continue;
    lost.push({ id: l.id, status: r ? (String(r.status) as JobStatus) : null });
  }
  return { lost };
}
