/**
 * The effect ledger behind `ctx.once` on SQLite. Reserves and records are fenced on the job's
 * lease and run in one IMMEDIATE transaction each; the batched forms put several in one
 * transaction (one commit, a single WAL append), each answered as if it had been asked alone.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, EffectStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { jsonOrNull, parseJsonOrUndefined, toEffectRow, toSqlId } from './sql.js';
import type { SqlEffect } from './sql.js';

const EFFECT_SQL = {
  leaseHolds: `-- leasehold effects.leaseHolds: is this job running under this lease? (fence for the effect ledger)
    SELECT 1 AS ok FROM {p}jobs WHERE id = @jobId AND lease_token = @leaseToken AND status = 'running'`,
  get: `-- leasehold effects.get: one effect by key
    SELECT * FROM {p}effects WHERE key = ?`,
  insert: `-- leasehold effects.insert: reserve a new effect for this attempt
    INSERT INTO {p}effects (key, job_id, lease_token, state, created_at)
    VALUES (@key, @jobId, @leaseToken, 'pending', @now)`,
  takeOver: `-- leasehold effects.takeOver: take over a pending effect, only if its holder no longer runs under the lease it reserved with
    UPDATE {p}effects SET job_id = @jobId, lease_token = @leaseToken
    WHERE key = @key AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM {p}jobs j
      WHERE j.id = {p}effects.job_id AND j.lease_token = {p}effects.lease_token AND j.status = 'running')`,
  complete: `-- leasehold effects.complete: mark a pending effect reserved under this lease as done, with its result
    UPDATE {p}effects SET state = 'done', result = @result, done_at = @now
    WHERE key = @key AND lease_token = @leaseToken AND state = 'pending'`,
  listAll: `-- leasehold effects.listAll: effects of every job, newest first (rowid = insertion order; the ledger is never pruned)
    SELECT * FROM {p}effects ORDER BY rowid DESC LIMIT @limit`,
  listByJob: `-- leasehold effects.listByJob: effects of one job, newest first
    SELECT * FROM {p}effects WHERE job_id = @jobId ORDER BY rowid DESC LIMIT @limit`,
  count: `-- leasehold effects.count: how many effects are recorded
    SELECT count(*) AS n FROM {p}effects`,
} as const;

export class SqliteEffects implements EffectStore {
  constructor(private readonly db: SqliteDb) {}

  async reserve(p: EffectParams): Promise<EffectReservation> {
    const now = this.db.now();
    return this.db.write(() => this.reserveIn(now, p));
  }

  async complete(p: EffectRecord): Promise<boolean> {
    const now = this.db.now();
    return this.db.write(() => this.completeIn(now, p));
  }

  async reserveMany(p: { items: readonly EffectParams[] }): Promise<EffectReservation[]> {
    assertDistinctEffectKeys(p.items, 'effects.reserveMany');
    const now = this.db.now();
    return this.db.write(() => p.items.map((item) => this.reserveIn(now, item)));
  }

  async completeMany(p: { items: readonly EffectRecord[] }): Promise<boolean[]> {
    assertDistinctEffectKeys(p.items, 'effects.completeMany');
    const now = this.db.now();
    return this.db.write(() => p.items.map((item) => this.completeIn(now, item)));
  }

  async get(p: { key: string }): Promise<EffectRow | null> {
    const row = this.db.read(() => this.db.stmt(EFFECT_SQL.get).get(p.key) as SqlEffect | undefined);
    return row === undefined ? null : toEffectRow(row);
  }

  async list(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    if (p.limit <= 0) return [];
    const db = this.db;
    if (p.jobId === undefined) return db.read(() => db.stmt(EFFECT_SQL.listAll).all({ limit: p.limit }) as SqlEffect[]).map(toEffectRow);
    const jobId = toSqlId(p.jobId);
    if (jobId === null) return [];
    return db.read(() => db.stmt(EFFECT_SQL.listByJob).all({ jobId, limit: p.limit }) as SqlEffect[]).map(toEffectRow);
  }

  async count(): Promise<number> {
    return this.db.read(() => (this.db.stmt(EFFECT_SQL.count).get() as { n: number }).n);
  }

  /** One reserve, inside the caller's write transaction. */
  private reserveIn(now: number, p: EffectParams): EffectReservation {
    const db = this.db;
    const jobId = toSqlId(p.jobId);
    if (jobId === null) return { state: 'lost' };
    if (!db.stmt(EFFECT_SQL.leaseHolds).get({ jobId, leaseToken: p.leaseToken })) return { state: 'lost' };
    const row = db.stmt(EFFECT_SQL.get).get(p.key) as SqlEffect | undefined;
    if (!row) {
      db.stmt(EFFECT_SQL.insert).run({ key: p.key, jobId, leaseToken: p.leaseToken, now });
      return { state: 'reserved' };
    }
    if (row.state === 'done') return { state: 'done', result: parseJsonOrUndefined(row.result) };
    // pending under another token: take over if that attempt is gone; busy while it still runs
    if (row.lease_token !== p.leaseToken && db.stmt(EFFECT_SQL.takeOver).run({ key: p.key, jobId, leaseToken: p.leaseToken }).changes === 0) {
      return { state: 'busy' };
    }
    return { state: 'reserved' };
  }

  /** One record, inside the caller's write transaction. */
  private completeIn(now: number, p: EffectRecord): boolean {
    const db = this.db;
    const jobId = toSqlId(p.jobId);
    if (jobId === null) return false;
    if (!db.stmt(EFFECT_SQL.leaseHolds).get({ jobId, leaseToken: p.leaseToken })) return false;
    return db.stmt(EFFECT_SQL.complete).run({ key: p.key, leaseToken: p.leaseToken, result: jsonOrNull(p.result), now }).changes > 0;
  }
}
