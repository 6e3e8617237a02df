/**
 * The effect ledger behind `ctx.once`: reserve an effect under the job's lease, record it done
 * (one at a time, or a batch of the worker's concurrent attempts in one statement), get, list
 * and count. A job id that is not one holds no lease.
 */
import { assertDistinctEffectKeys } from '../../core/effects.js';
import { TransientStorageError } from '../../core/errors.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, EffectStore } from '../../core/storage.js';
import { type Db } from './db.js';
import { NOW, jsonParam, toEffectRow, validId } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

export function effectsSql(s: string) {
  return {
    /**
     * $1 key, $2 job id, $3 lease token. held = our lease is valid; reserved = inserted, already
     * ours, or taken over from a holder whose job no longer runs under its lease.
     */
    reserve: `-- leasehold reserveEffect: under a held lease, insert the effect as pending, or take over a pending one whose holder's lease is gone
WITH lease AS (
  SELECT id FROM ${s}.jobs
  WHERE id = $2::bigint AND lease_token = $3::text AND status = 'running' FOR SHARE
), up AS (
  INSERT INTO ${s}.effects (key, job_id, lease_token, state, created_at)
  SELECT $1::text, lease.id, $3::text, 'pending', ${NOW} FROM lease
  ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, lease_token = excluded.lease_token
  WHERE ${s}.effects.state = 'pending'
    AND (${s}.effects.lease_token = excluded.lease_token OR NOT EXISTS (
      SELECT 1 FROM ${s}.jobs h
      WHERE h.id = ${s}.effects.job_id AND h.lease_token = ${s}.effects.lease_token AND h.status = 'running'))
  RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM lease) AS held, EXISTS (SELECT 1 FROM up) AS reserved`,

    /** $1 key */
    state: `-- leasehold reserveEffect (not reserved): read an effect's state and result (done, or pending under a live holder)
SELECT state, result FROM ${s}.effects WHERE key = $1::text`,

    /** $1 key, $2 job id, $3 lease token, $4 result json text */
    complete: `-- leasehold completeEffect: mark this lease's pending effect done with its result, only while the lease holds
UPDATE ${s}.effects e SET state = 'done', result = $4::json, done_at = ${NOW}
FROM ${s}.jobs j
WHERE e.key = $1::text AND e.job_id = $2::bigint AND e.lease_token = $3::text AND e.state = 'pending'
  AND j.id = $2::bigint AND j.lease_token = $3::text AND j.status = 'running'
RETURNING e.key`,

    /** $1 keys (distinct), $2 job ids, $3 lease tokens: one row per item with its 1-based `ord`, and `held` and `reserved` as `reserve`'s. */
    reserveMany: `-- leasehold reserveEffects: reserveEffect for several effects (distinct keys) in one statement
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) WITH ORDINALITY AS u(key, job_id, lease_token, ord)
), lease AS (
  -- share-locked in id order, the order finishes and heartbeats lock jobs in; "IS TRUE" keeps
  -- the plan off jobs_running_lease_idx (whose predicate "status = 'running'" implies), which
  -- it would read whole: the primary key finds each job at once
  SELECT id, lease_token FROM ${s}.jobs
  WHERE id = ANY($2::bigint[]) AND (status = 'running') IS TRUE ORDER BY id FOR SHARE
), held AS (
  SELECT i.key, i.job_id, i.lease_token FROM input i JOIN lease l ON l.id = i.job_id AND l.lease_token = i.lease_token
), up AS (
  -- in key order (an existing row is locked even when the update is skipped), as records lock
  -- them: two batches over the same keys wait for each other instead of deadlocking
  INSERT INTO ${s}.effects (key, job_id, lease_token, state, created_at)
  SELECT key, job_id, lease_token, 'pending', ${NOW} FROM held ORDER BY key
  ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, lease_token = excluded.lease_token
  WHERE ${s}.effects.state = 'pending'
    AND (${s}.effects.lease_token = excluded.lease_token OR NOT EXISTS (
      SELECT 1 FROM ${s}.jobs h
      WHERE h.id = ${s}.effects.job_id AND h.lease_token = ${s}.effects.lease_token AND (h.status = 'running') IS TRUE))
  RETURNING key
)
SELECT i.ord, h.key IS NOT NULL AS held, u.key IS NOT NULL AS reserved
FROM input i LEFT JOIN held h ON h.key = i.key LEFT JOIN up u ON u.key = i.key
ORDER BY i.ord`,

    /** $1 keys: the state and result of each that exists. */
    stateMany: `-- leasehold reserveEffects (not reserved): read several effects' state and result
SELECT e.key, e.state, e.result FROM ${s}.effects e WHERE e.key = ANY($1::text[])`,

    /** $1 keys (distinct), $2 job ids, $3 lease tokens, $4 result json texts: the keys recorded. */
    completeMany: `-- leasehold completeEffects: mark several of these leases' pending effects done, each only while its lease holds
WITH locked AS (
  -- locked in key order first, as reserves lock them: a record batch and a reserve batch over
  -- the same keys wait for each other instead of deadlocking
  SELECT e.key, i.result
  FROM unnest($1::text[], $2::bigint[], $3::text[], $4::json[]) AS i(key, job_id, lease_token, result)
  JOIN ${s}.effects e ON e.key = i.key
  JOIN ${s}.jobs j ON j.id = i.job_id
  WHERE e.job_id = i.job_id AND e.lease_token = i.lease_token AND e.state = 'pending'
    AND j.lease_token = i.lease_token AND (j.status = 'running') IS TRUE
  ORDER BY e.key FOR UPDATE OF e
), done AS (
  UPDATE ${s}.effects e SET state = 'done', result = l.result, done_at = ${NOW}
  FROM locked l WHERE e.key = l.key
  RETURNING e.key
)
SELECT key FROM done`,

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

export class PostgresEffects extends SqlAggregate<Db, ReturnType<typeof effectsSql>> implements EffectStore {
  /** the writes of every `ctx.once`, and the read after a reserve that did not land, prepared */
  private readonly hot = {
    reserve: this.db.prepare(this.sql.reserve), state: this.db.prepare(this.sql.state), complete: this.db.prepare(this.sql.complete),
    reserveMany: this.db.prepare(this.sql.reserveMany), stateMany: this.db.prepare(this.sql.stateMany), completeMany: this.db.prepare(this.sql.completeMany),
  };

  constructor(db: Db) {
    super(db, effectsSql(db.q));
  }

  async reserve(p: EffectParams): Promise<EffectReservation> {
    const jobId = validId(p.jobId);
    if (jobId === null) return { state: 'lost' };
    const [r] = await this.db.run('reserveEffect', this.hot.reserve, [p.key, jobId, p.leaseToken]);
    if (!r?.held) return { state: 'lost' };
    if (r.reserved) return { state: 'reserved' };
    const [e] = await this.db.run('reserveEffect', this.hot.state, [p.key]);
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
    const rows = await this.db.run('reserveEffects', this.hot.reserveMany, [asked.map((a) => a.p.key), asked.map((a) => validId(a.p.jobId)), asked.map((a) => a.p.leaseToken)]);
    const seen: { p: EffectParams; i: number }[] = [];
    for (const r of rows) {
      const a = asked[Number(r.ord) - 1]!;
      if (!r.held) out[a.i] = { state: 'lost' };
      else if (r.reserved) out[a.i] = { state: 'reserved' };
      else seen.push(a);
    }
    if (seen.length > 0) {
      const effects = new Map((await this.db.run('reserveEffects', this.hot.stateMany, [seen.map((a) => a.p.key)])).map((e) => [e.key as string, e]));
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
    return (await this.db.run('completeEffect', this.hot.complete, [p.key, jobId, p.leaseToken, jsonParam(p.result)])).length > 0;
  }

  /** True where this lease's pending row became done. */
  async completeMany(p: { items: readonly EffectRecord[] }): Promise<boolean[]> {
    const ps = p.items;
    assertDistinctEffectKeys(ps, 'completeEffects');
    const valid = ps.filter((x) => validId(x.jobId) !== null);
    if (valid.length === 0) return ps.map(() => false);
    const params = [valid.map((x) => x.key), valid.map((x) => validId(x.jobId)), valid.map((x) => x.leaseToken), valid.map((x) => jsonParam(x.result))];
    const done = new Set((await this.db.run('completeEffects', this.hot.completeMany, params)).map((r) => r.key as string));
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
