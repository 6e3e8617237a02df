/**
 * The job write paths of the MySQL/MariaDB adapter: insert (idempotent), claim, heartbeat and
 * fenced finish. Each is one transaction; the orchestration is here, the SQL in mysql-sql.ts.
 */
import { randomBytes } from 'node:crypto';
import type {
  ClaimParams,
  ClaimedJob,
  FinishParams,
  FinishResult,
  HeartbeatParams,
  HeartbeatResult,
  InsertResult,
  JobRow,
  NewJob,
} from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { Queryable, Row } from './mysql-db.js';
import { exec, idParam, micros, run, toJobRow, utcLiteral } from './mysql-db.js';
import type { MysqlSql } from './mysql-sql.js';

const ER_DUP_ENTRY = 1062;

function isDuplicate(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { errno?: unknown }).errno === ER_DUP_ENTRY;
}

/** Insert a batch on `c` (inside a transaction the caller runs); results in input order. */
export async function insertJobsOn(c: Queryable, sql: MysqlSql, jobs: readonly NewJob[]): Promise<InsertResult[]> {
  const out: { id: string; created: boolean }[] = [];
  const existing = new Map<string, JobRow>();
  for (const j of jobs) {
    try {
      const res = await exec(c, sql.insertJob, [
        j.queue,
        j.type,
        JSON.stringify(j.payload ?? null),
        j.priority,
        j.runAt ? utcLiteral(j.runAt) : null,
        micros(j.runAfterMs),
        j.maxAttempts,
        j.idempotencyKey,
        j.timeoutMs,
        j.maxRuntimeMs,
      ]);
      out.push({ id: String(res.insertId), created: true });
    } catch (e) {
      // the key is taken (by a committed row, or by an earlier item of this batch): return that row
      if (!isDuplicate(e) || j.idempotencyKey === null) throw e;
      const rows = await run(c, sql.jobByKeyLocked, [j.idempotencyKey]);
      if (!rows[0]) throw e;
      const row = toJobRow(rows[0]);
      existing.set(row.id, row);
      out.push({ id: row.id, created: false });
    }
  }
  const ids = [...new Set(out.filter((o) => o.created).map((o) => o.id))];
  const byId = new Map<string, JobRow>(existing);
  if (ids.length) {
    for (const r of await run(c, sql.jobsByIds, [ids.map((id) => BigInt(id))])) byId.set(String(r.id), toJobRow(r));
  }
  return out.map((o) => {
    const job = byId.get(o.id);
    if (!job) throw new Error(`mysql insertJobs: inserted job ${o.id} not found`);
    return { job, created: o.created };
  });
}

function compareCandidates(a: Row, b: Row): number {
  const pa = Number(a.priority);
  const pb = Number(b.priority);
  if (pa !== pb) return pa - pb;
  const ra = String(a.run_at);
  const rb = String(b.run_at);
  if (ra !== rb) return ra < rb ? -1 : 1;
  const ia = BigInt(String(a.id));
  const ib = BigInt(String(b.id));
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

/**
 * Claim inside a READ COMMITTED transaction. One index-ordered SKIP LOCKED scan per due status
 * (an `IN` over both would sort every due row and lock them all, starving other claimers),
 * merged in claim order; then one UPDATE giving each row its own token, the attempt rows, and
 * the rows read back.
 */
export async function claimOn(c: Queryable, sql: MysqlSql, p: ClaimParams): Promise<ClaimedJob[]> {
  if (p.limit <= 0 || p.types.length === 0 || (p.queues !== null && p.queues.length === 0)) return [];
  const withQueues = p.queues !== null;
  const candidates: Row[] = [];
  for (const status of ['queued', 'failed'] as const) {
    const values: unknown[] = [status, p.types];
    if (withQueues) values.push(p.queues);
    values.push(p.limit);
    candidates.push(...(await run(c, sql.claimCandidates(withQueues), values)));
  }
  const picked = candidates.sort(compareCandidates).slice(0, p.limit);
  if (picked.length === 0) return [];
  const ids = picked.map((r) => BigInt(String(r.id)));
  const tokenArgs: unknown[] = [];
  for (const id of ids) tokenArgs.push(id, randomBytes(16).toString('hex'));
  await exec(c, sql.claimUpdate(ids.length), [p.workerId, ...tokenArgs, micros(p.leaseMs), ids]);
  await exec(c, sql.openAttempts, [ids]);
  const rows = await run(c, sql.claimedRows, [ids]);
  return rows.map((r) => toJobRow(r) as ClaimedJob);
}

/** Extend held leases (one UPDATE), then report the others with the job's status. */
export async function heartbeatOn(c: Queryable, sql: MysqlSql, p: HeartbeatParams): Promise<HeartbeatResult> {
  const leases = p.leases.map((l) => ({ ...l, idp: idParam(l.id) }));
  const valid = leases.filter((l) => l.idp !== null);
  if (valid.length === 0) return { lost: leases.map((l) => ({ id: l.id, status: null })) };
  await exec(c, sql.heartbeat, [micros(p.leaseMs), valid.map((l) => [l.idp, l.leaseToken])]);
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

/** Fenced finishes on `c` (inside a transaction); results in input order. */
export async function finishOn(c: Queryable, sql: MysqlSql, items: readonly FinishParams[]): Promise<FinishResult[]> {
  const results: FinishResult[] = [];
  for (const f of items) {
    const id = idParam(f.id);
    if (id === null) {
      results.push({ id: f.id, applied: false });
      continue;
    }
    const sets: string[] = [];
    const setValues: unknown[] = [];
    if (f.runAfterMs !== undefined && f.runAfterMs !== null) {
      sets.push(sql.setRunAfter);
      setValues.push(micros(f.runAfterMs));
    }
    if (f.uncountAttempt) sets.push(sql.setUncount);
    if (f.error) {
      sets.push(sql.setError);
      setValues.push(f.error.code, f.error.message);
    }
    const terminal = f.status === 'succeeded' || f.status === 'dead' || f.status === 'cancelled';
    const res = await exec(c, sql.finishJob(sets, f.onlyIfExpired === true), [
      f.status,
      terminal ? 1 : 0,
      ...setValues,
      id,
      f.leaseToken,
    ]);
    const applied = res.affectedRows > 0;
    if (applied) {
      const err = f.attempt.error ?? null;
      await exec(c, sql.closeAttempt, [
        f.attempt.outcome,
        err?.code ?? null,
        err?.message ?? null,
        err?.stack ?? null,
        f.attempt.retryDelayMs ?? null,
        id,
        f.leaseToken,
      ]);
    }
    results.push({ id: f.id, applied });
  }
  return results;
}
