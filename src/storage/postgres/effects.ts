/**
 * The effect ledger behind `ctx.once`: reserve an effect under the job's lease, record it done
 * (one at a time, or a batch of the worker's concurrent attempts in one statement), get, list
 * and count. A job id that is not one holds no lease.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, EffectStore } from '../../core/storage.js';
import { prepared, type Db, type Prepared } from './db.js';
import { effectsSql } from './postgres-sql-effects.js';
import { jsonParam, toEffectRow, validId } from './sql.js';

function ledgerSql(s: string) {
  return {
    /** $1 key */
    get: `-- leasehold getEffect: the effect recorded under this key (the whole row)
SELECT * FROM ${s}.effects WHERE key = $1::text`,

    /** $1 job id (null = all), $2 limit */
    list: `-- leasehold listEffects: recorded effects, newest first, optionally for one job
SELECT * FROM ${s}.effects WHERE ($1::bigint IS NULL OR job_id = $1::bigint)
ORDER BY created_at DESC, key LIMIT $2::int`,

    count: `-- leasehold countEffects: how many effects the ledger holds
SELECT count(*)::int AS n FROM ${s}.effects`,
  };
}

type Writes = Record<'reserveEffect' | 'getEffect' | 'completeEffect' | 'reserveEffects' | 'getEffects' | 'completeEffects', Prepared>;

export class PostgresEffects implements EffectStore {
  private readonly sql: ReturnType<typeof ledgerSql>;
  private readonly w: Writes;

  constructor(private readonly db: Db) {
    this.sql = ledgerSql(db.q);
    const fx = effectsSql(db.q);
    const names = ['reserveEffect', 'getEffect', 'completeEffect', 'reserveEffects', 'getEffects', 'completeEffects'] as const;
    this.w = Object.fromEntries(names.map((n) => [n, prepared(fx[n])])) as Writes;
  }

  async reserve(p: EffectParams): Promise<EffectReservation> {
    const jobId = validId(p.jobId);
    if (jobId === null) return { state: 'lost' };
    const [r] = await this.db.run('reserveEffect', this.w.reserveEffect, [p.key, jobId, p.leaseToken]);
    if (!r?.held) return { state: 'lost' };
    if (r.reserved) return { state: 'reserved' };
    const [e] = await this.db.run('reserveEffect', this.w.getEffect, [p.key]);
    if (e?.state === 'done') return { state: 'done', result: e.result ?? null };
    // pending under another job that still runs under its lease: that attempt may be doing it
    if (e?.state === 'pending') return { state: 'busy' };
    throw new TransientStorageError(`postgres: effect "${p.key}" vanished during reserveEffect; retry`);
  }

  /** An item whose row was neither reserved nor found afterwards (it changed in between) is asked again alone. */
  async reserveMany(p: { items: readonly EffectParams[] }): Promise<EffectReservation[]> {
    const ps = p.items;
    assertDistinctEffectKeys(ps, 'reserveEffects');
    const out: (EffectReservation | undefined)[] = ps.map((x) => (validId(x.jobId) === null ? { state: 'lost' } : undefined));
    const asked = ps.flatMap((x, i) => (out[i] === undefined ? [{ p: x, i }] : []));
    if (asked.length === 0) return out as EffectReservation[];
    const rows = await this.db.run('reserveEffects', this.w.reserveEffects, [asked.map((a) => a.p.key), asked.map((a) => validId(a.p.jobId)), asked.map((a) => a.p.leaseToken)]);
    const seen: { p: EffectParams; i: number }[] = [];
    for (const r of rows) {
      const a = asked[Number(r.ord) - 1]!;
      if (!r.held) out[a.i] = { state: 'lost' };
      else if (r.reserved) out[a.i] = { state: 'reserved' };
      else seen.push(a);
    }
    if (seen.length > 0) {
      const effects = new Map((await this.db.run('reserveEffects', this.w.getEffects, [seen.map((a) => a.p.key)])).map((e) => [e.effect_key as string, e]));
      for (const a of seen) {
        const e = effects.get(a.p.key);
        if (e?.state === 'done') out[a.i] = { state: 'done', result: e.result ?? null };
        else if (e?.state === 'pending') out[a.i] = { state: 'busy' };
        else out[a.i] = await this.reserve(a.p);
      }
    }
    return out as EffectReservation[];
  }

  async complete(p: EffectRecord): Promise<boolean> {
    const jobId = validId(p.jobId);
    if (jobId === null) return false;
    return (await this.db.run('completeEffect', this.w.completeEffect, [p.key, jobId, p.leaseToken, jsonParam(p.result)])).length > 0;
  }

  /** True where this lease's pending row became done. */
  async completeMany(p: { items: readonly EffectRecord[] }): Promise<boolean[]> {
    const ps = p.items;
    assertDistinctEffectKeys(ps, 'completeEffects');
    const valid = ps.filter((x) => validId(x.jobId) !== null);
    if (valid.length === 0) return ps.map(() => false);
    const params = [valid.map((x) => x.key), valid.map((x) => validId(x.jobId)), valid.map((x) => x.leaseToken), valid.map((x) => jsonParam(x.result))];
    const done = new Set((await this.db.run('completeEffects', this.w.completeEffects, params)).map((r) => r.done_key as string));
    return ps.map((x) => validId(x.jobId) !== null && done.has(x.key));
  }

  async get(p: { key: string }): Promise<EffectRow | null> {
    const [row] = await this.db.run('getEffect', this.sql.get, [p.key]);
    return row ? toEffectRow(row) : null;
  }

  async list(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    const jobId = p.jobId === undefined ? null : validId(p.jobId);
    if ((p.jobId !== undefined && jobId === null) || p.limit <= 0) return [];
    return (await this.db.run('listEffects', this.sql.list, [jobId, p.limit])).map(toEffectRow);
  }

  async count(): Promise<number> {
    const [row] = await this.db.run('countEffects', this.sql.count);
    return Number(row?.n ?? 0);
  }
}
