/**
 * The effect ledger's writes (`ctx.once`) on PostgreSQL. Each statement starts with a one-line
 * `--` header; times come from the database clock; `s` is the quoted schema name.
 *
 * One effect at a time: reserveEffect, getEffect, completeEffect. Several at once (the worker
 * batches the calls of its concurrent attempts): the bodies of the functions of migration 7
 * (postgres-functions.ts), and the calls of those functions. They are functions for the reason
 * the hot path is: a batch is an array, and a plan cached while the jobs or effects table was
 * small (a fresh or bulk-loaded table autovacuum has not analyzed) scanned the whole table for
 * every batch later on; the functions' settings leave only the index lookups written here.
 */
import { NOW } from './sql.js';

export function effectsSql(s: string) {
  return {
    /**
     * $1 key, $2 job id, $3 lease token. held = our lease is valid; reserved = inserted, already
     * ours, or taken over from a holder whose job no longer runs under its lease.
     */
    reserveEffect: `-- leasehold reserveEffect: under a held lease, insert the effect as pending, or take over a pending one whose holder's lease is gone
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
    getEffect: `-- leasehold reserveEffect (not reserved): read an effect's state and result (done, or pending under a live holder)
SELECT state, result FROM ${s}.effects WHERE key = $1::text`,

    /** $1 key, $2 job id, $3 lease token, $4 result json text */
    completeEffect: `-- leasehold completeEffect: mark this lease's pending effect done with its result, only while the lease holds
UPDATE ${s}.effects e SET state = 'done', result = $4::json, done_at = ${NOW}
FROM ${s}.jobs j
WHERE e.key = $1::text AND e.job_id = $2::bigint AND e.lease_token = $3::text AND e.state = 'pending'
  AND j.id = $2::bigint AND j.lease_token = $3::text AND j.status = 'running'
RETURNING e.key`,

    /**
     * Body of reserve_effects($1 keys (distinct), $2 job ids, $3 lease tokens): one row per item
     * with its 1-based `ord`, and `held` and `reserved` as reserveEffect's.
     */
    reserveEffectsBody: `-- leasehold reserveEffects: reserveEffect for several effects (distinct keys) in one statement
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

    /** Body of get_effects($1 keys): the state and result of each that exists. */
    getEffectsBody: `-- leasehold reserveEffects (not reserved): read several effects' state and result
SELECT e.key, e.state, e.result FROM ${s}.effects e WHERE e.key = ANY($1::text[])`,

    /**
     * Body of complete_effects($1 keys (distinct), $2 job ids, $3 lease tokens, $4 result json
     * texts): the keys recorded.
     */
    completeEffectsBody: `-- leasehold completeEffects: mark several of these leases' pending effects done, each only while its lease holds
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

    /** $1 keys (distinct), $2 job ids, $3 lease tokens */
    reserveEffects: `-- leasehold reserveEffects: reserve several effects under their leases; held and reserved per position (the reserve_effects function)
SELECT ord, held, reserved FROM ${s}.reserve_effects($1::text[], $2::bigint[], $3::text[])`,

    /** $1 keys */
    getEffects: `-- leasehold reserveEffects (not reserved): several effects' state and result (the get_effects function)
SELECT effect_key, state, result FROM ${s}.get_effects($1::text[])`,

    /** $1 keys (distinct), $2 job ids, $3 lease tokens, $4 result json texts */
    completeEffects: `-- leasehold completeEffects: mark these leases' pending effects done; the keys recorded (the complete_effects function)
SELECT done_key FROM ${s}.complete_effects($1::text[], $2::bigint[], $3::text[], $4::json[])`,
  };
}
