/**
 * The in-memory effect ledger behind `ctx.once`: reserve under the job's lease, record done,
 * the batched forms (one synchronous pass, so as atomic as one write), get, list and count.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, EffectStore } from '../../core/storage.js';
import { effectOut, toJson, type MemoryDb } from './db.js';

export class MemoryEffects implements EffectStore {
  constructor(private readonly db: MemoryDb) {}

  async reserve(p: EffectParams): Promise<EffectReservation> {
    return this.reserveOne(p, this.db.now());
  }

  async complete(p: EffectRecord): Promise<boolean> {
    return this.completeOne(p, this.db.now());
  }

  async reserveMany(p: { items: readonly EffectParams[] }): Promise<EffectReservation[]> {
    assertDistinctEffectKeys(p.items, 'effects.reserveMany');
    const now = this.db.now();
    return p.items.map((item) => this.reserveOne(item, now));
  }

  async completeMany(p: { items: readonly EffectRecord[] }): Promise<boolean[]> {
    assertDistinctEffectKeys(p.items, 'effects.completeMany');
    const now = this.db.now();
    return p.items.map((item) => this.completeOne(item, now));
  }

  /** The effect under exactly this key, or null. */
  async get(p: { key: string }): Promise<EffectRow | null> {
    this.db.now();
    const row = this.db.effects.get(p.key);
    return row === undefined ? null : effectOut(row);
  }

  /** Newest first. */
  async list(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    this.db.now();
    return [...this.db.effects.values()]
      .filter((e) => p.jobId === undefined || e.jobId === p.jobId)
      .sort((a, b) => b.seq - a.seq)
      .slice(0, Math.max(0, p.limit))
      .map(effectOut);
  }

  async count(): Promise<number> {
    this.db.now();
    return this.db.effects.size;
  }

  private holdsLease(jobId: string, leaseToken: string): boolean {
    const job = this.db.jobs.get(jobId);
    return job !== undefined && job.status === 'running' && job.leaseToken === leaseToken;
  }

  /** 'lost' unless the job runs under this token; otherwise reserve, report done, or take over. */
  private reserveOne(p: EffectParams, now: Date): EffectReservation {
    if (!this.holdsLease(p.jobId, p.leaseToken)) return { state: 'lost' };
    const row = this.db.effects.get(p.key);
    if (row === undefined) {
      const seq = this.db.effectSeq();
      this.db.effects.set(p.key, { key: p.key, jobId: p.jobId, leaseToken: p.leaseToken, state: 'pending', resultJson: null, createdAt: now, doneAt: null, seq });
      return { state: 'reserved' };
    }
    if (row.state === 'done') return { state: 'done', result: effectOut(row).result };
    // pending under another token: busy while that attempt still runs, else take it over
    if (row.leaseToken !== p.leaseToken && this.holdsLease(row.jobId, row.leaseToken)) return { state: 'busy' };
    row.jobId = p.jobId;
    row.leaseToken = p.leaseToken;
    return { state: 'reserved' };
  }

  /** Pending row under this (still held) lease → done with its result. */
  private completeOne(p: EffectRecord, now: Date): boolean {
    if (!this.holdsLease(p.jobId, p.leaseToken)) return false;
    const row = this.db.effects.get(p.key);
    if (row === undefined || row.state !== 'pending' || row.leaseToken !== p.leaseToken) return false;
    row.state = 'done';
    row.resultJson = toJson(p.result);
    row.doneAt = now;
    return true;
  }
}
