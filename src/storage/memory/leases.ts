/**
 * Token-fenced leases on the in-memory job rows: claim (opening an attempt row), heartbeat,
 * finish, and the sweeper's query for expired leases. Each call is one synchronous step.
 */
import { LeaseholdError } from '../../core/errors.js';
import type { JobStatus } from '../../core/status.js';
import type { ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseStore } from '../../core/storage.js';
import { type ClaimFilter, flowGroups } from '../../core/flow-groups.js';
import { jobOut, newToken, type MemoryDb, type StoredJob } from './db.js';
import { flowPick } from './flow.js';
import { settleBatch, settleChildren } from './workflows.js';

const DUE: readonly JobStatus[] = ['queued', 'failed'];
const FINISHED: readonly JobStatus[] = ['succeeded', 'dead', 'cancelled'];

export class MemoryLeases implements LeaseStore {
  constructor(private readonly db: MemoryDb) {}

  /** Due jobs of unpaused queues by priority, run_at, id, within their types' and queues' limits; each gets a fresh lease and a 'running' attempt row. */
  async claim(p: ClaimParams): Promise<ClaimedJob[]> {
    const now = this.db.now();
    const paused = new Set([...this.db.queueStates.values()].filter((q) => q.paused).map((q) => q.queue));
    const byOrder = (a: StoredJob, b: StoredJob) => a.priority - b.priority || a.runAt.getTime() - b.runAt.getTime() || a.seq - b.seq;
    const dueOf = (f: ClaimFilter) =>
      [...this.db.jobs.values()]
        .filter((j) => DUE.includes(j.status) && j.runAt.getTime() <= now.getTime() && f.types.includes(j.type) && (f.queues === null || f.queues.includes(j.queue)) && !f.exceptQueues.includes(j.queue) && !paused.has(j.queue))
        .sort(byOrder);
    const { limited, free } = flowGroups(p);
    const claimed: ClaimedJob[] = [];
    // each group's picks are leased before the next group's plan, which may count the same type
    for (const g of limited) claimed.push(...flowPick(this.db, g, dueOf(g), now.getTime(), Math.max(0, p.limit) - claimed.length).map((j) => this.lease(j, p, now)));
    if (free) claimed.push(...dueOf(free).slice(0, Math.max(0, p.limit - claimed.length)).map((j) => this.lease(j, p, now)));
    return claimed;
  }

  /** The job leased to the claim's worker, its attempt opened. */
  private lease(j: StoredJob, p: ClaimParams, now: Date): ClaimedJob {
    const token = newToken();
    j.status = 'running';
    j.lockedBy = p.workerId;
    j.leaseToken = token;
    j.lockedUntil = new Date(now.getTime() + p.leaseMs);
    j.heartbeatAt = now;
    j.startedAt = now;
    j.attempts += 1;
    j.updatedAt = now;
    const seq = this.db.attemptSeq();
    this.db.attempts.set(String(seq), {
      seq,
      id: String(seq),
      jobId: j.id,
      attempt: j.attempts,
      workerId: p.workerId,
      leaseToken: token,
      startedAt: now,
      finishedAt: null,
      durationMs: null,
      outcome: 'running',
      errorCode: null,
      errorMessage: null,
      errorStack: null,
      retryDelayMs: null,
      waitMs: Math.max(0, now.getTime() - j.runAt.getTime()),
    });
    return jobOut(j) as ClaimedJob;
  }

  /** Extends every lease still held under its token; reports the others as lost. */
  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    const now = this.db.now();
    const lost: HeartbeatResult['lost'] = [];
    for (const l of p.leases) {
      const j = this.db.jobs.get(l.id);
      if (j && j.status === 'running' && j.leaseToken === l.leaseToken) {
        j.lockedUntil = new Date(now.getTime() + p.leaseMs);
        j.heartbeatAt = now;
        j.updatedAt = now;
      } else {
        lost.push({ id: l.id, status: j ? j.status : null });
      }
    }
    return { lost };
  }

  /** Each item fenced by its lease token (and, for the sweeper, by expiry); results in input order. */
  async finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    if (p.tx !== undefined) throw new LeaseholdError('NOT_SUPPORTED', 'caller transactions are not supported by the memory storage');
    const now = this.db.now();
    return p.items.map((item) => ({ id: item.id, applied: this.finishOne(item, now) }));
  }

  /** Running jobs whose lease ran out, oldest expiry first; only of `types` when given. */
  async findExpired(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    const nowMs = this.db.now().getTime();
    const types = p.types === undefined ? null : new Set(p.types);
    return [...this.db.jobs.values()]
      .filter((j) => j.status === 'running' && j.leaseToken !== null && j.lockedUntil !== null && j.lockedUntil.getTime() < nowMs && (types === null || types.has(j.type)))
      .sort((a, b) => (a.lockedUntil as Date).getTime() - (b.lockedUntil as Date).getTime() || a.seq - b.seq)
      .slice(0, Math.max(0, p.limit))
      .map((j) => ({
        id: j.id,
        type: j.type,
        leaseToken: j.leaseToken as string,
        lockedBy: j.lockedBy,
        attempts: j.attempts,
        maxAttempts: j.maxAttempts,
      }));
  }

  /** False when the lease is gone (or, with onlyIfExpired, still live): nothing written. */
  private finishOne(p: FinishParams, now: Date): boolean {
    const j = this.db.jobs.get(p.id);
    if (!j || j.status !== 'running' || j.leaseToken !== p.leaseToken) return false;
    if (p.onlyIfExpired && !(j.lockedUntil !== null && j.lockedUntil.getTime() < now.getTime())) return false;
    j.status = p.status;
    if (p.runAfterMs !== undefined) j.runAt = new Date(now.getTime() + p.runAfterMs);
    if (p.uncountAttempt) j.attempts = Math.max(0, j.attempts - 1);
    if (p.error) {
      j.lastErrorCode = p.error.code;
      j.lastError = p.error.message;
    }
    j.lockedBy = null;
    j.leaseToken = null;
    j.lockedUntil = null;
    j.finishedAt = FINISHED.includes(p.status) ? now : null;
    j.updatedAt = now;
    if (p.result !== undefined) j.resultJson = p.result;
    if (j.children) settleChildren(this.db, j, now);
    if (j.batchId !== undefined) settleBatch(this.db, j, now);
    this.db.closeAttempt(j.id, p.leaseToken, p.attempt, now);
    return true;
  }
}
