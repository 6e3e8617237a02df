/**
 * The hot path as server-side functions (migration 3): claim, heartbeat and finish each run as
 * one call, in one round trip, with planner settings attached to the function.
 *
 * Why functions: the plans of these statements must not depend on planner statistics, which a
 * young or bulk-loaded table lacks until autovacuum analyzes it. Without them the planner
 * guesses the partial indexes hold few rows, and
 * - the claim sorted *all* due rows (bitmap scan) before taking the first $4, where the
 *   in-order scan of jobs_due_idx stops after $4 (19 ms vs 0.4 ms for 300 of 20,000 due rows);
 * - finishes and heartbeats read the whole table or the running-lease index instead of probing
 *   the primary key, slower and slower as a drain leaves dead index entries behind.
 * `SET enable_seqscan/enable_bitmapscan = off` on the function leaves only the index scans
 * these statements were written for, for the duration of the call (also inside a caller's
 * transaction, whose own settings are restored after). The same settings as a `SET LOCAL`
 * would cost two extra round trips per call (BEGIN; SET … / COMMIT), which on this machine's
 * loopback cost more Node CPU than the rest of a claim's client side.
 *
 * The bodies are the statements of postgres-sql-jobs.ts ($1… are the function's arguments).
 * A change to those statements needs a new migration that replaces these functions.
 */
import { effectsSql } from './postgres-sql-effects.js';
import { jobsSql } from './postgres-sql-jobs.js';

/** The job row's columns and types, as the claim function returns them. */
const JOB_RESULT = `id bigint, queue text, type text, payload json, status text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, idempotency_key text, locked_by text, lease_token text,
  locked_until timestamptz, heartbeat_at timestamptz, started_at timestamptz, finished_at timestamptz,
  last_error_code text, last_error text, timeout_ms bigint, max_runtime_ms bigint, created_at timestamptz,
  updated_at timestamptz, schedule_name text, slot_at timestamptz`;

/**
 * Generic plans, planned once per connection: a generic plan cannot know a batch's size (it
 * assumes 10 rows per array), so the statements are written to need no such knowledge — each
 * step reads the previous one's output and no two CTEs are joined. (Joined, 10-row guesses
 * made nested loops: 300 finishes took 75 ms instead of 6.) Planning each call instead cost
 * about 1 ms per finish. plpgsql, not sql: an SQL function would plan its body on every call.
 * `use_column`: the result columns' names (id, ord…) would otherwise clash with the tables'
 * columns in the body.
 */
const INDEXED = 'SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan';
const body = (stmt: string): string => `$fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
${stmt};
END
$fn$`;

/** The claimed-job columns and types the six-argument claim returns (CLAIM_COLUMNS). */
const CLAIM_RESULT = `id bigint, queue text, type text, payload json, priority integer, run_at timestamptz, attempts integer,
  max_attempts integer, idempotency_key text, locked_until timestamptz, started_at timestamptz, finished_at timestamptz,
  last_error_code text, last_error text, timeout_ms bigint, max_runtime_ms bigint, created_at timestamptz,
  schedule_name text, slot_at timestamptz`;

/**
 * Migration 4: the claim with lease tokens from a base the caller sends (`claimWithBase`),
 * returning only what the worker cannot compute — an overload of claim_jobs: workers of the
 * previous version keep calling the five-argument one — and the finish of a batch of successes.
 */
export function migration4Functions(s: string): string {
  const sql = jobsSql(s);
  return `
-- claim_jobs (with a token base): lease up to lim due jobs, tokens made from token_base and the id
CREATE FUNCTION ${s}.claim_jobs(worker text, types text[], queues text[], lim integer, lease_ms float8, token_base text)
RETURNS TABLE (${CLAIM_RESULT})
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.claimWithBase)};

-- finish_succeeded: land a batch of fenced successes and write their attempt rows; returns the positions that landed
CREATE FUNCTION ${s}.finish_succeeded(ids bigint[], tokens text[])
RETURNS TABLE (ord bigint)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.finishSucceeded)};
`;
}

/** Migration 5: the finish of a batch of successes without its lock step (`finishSucceededUnlocked`). */
export function migration5Functions(s: string): string {
  return `
-- finish_succeeded: land a batch of fenced successes and write their attempt rows; returns the positions that landed
CREATE OR REPLACE FUNCTION ${s}.finish_succeeded(ids bigint[], tokens text[])
RETURNS TABLE (ord bigint)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(jobsSql(s).finishSucceededUnlocked)};
`;
}

/**
 * Migration 8: the finish of a batch of successes that names the worker whose claims they are
 * (`finishSucceededBy`), an overload: workers of the previous version keep calling the
 * two-argument finish_succeeded.
 */
export function migration8Functions(s: string): string {
  return `
-- finish_succeeded (one worker's claims): land a batch of fenced successes and write their attempt rows; returns the positions that landed
CREATE FUNCTION ${s}.finish_succeeded(ids bigint[], tokens text[], worker text)
RETURNS TABLE (ord bigint)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(jobsSql(s).finishSucceededBy)};
`;
}

/**
 * Migration 7: the effect ledger's batched writes (postgres-sql-effects.ts), for the worker's
 * batches of `ctx.once` calls. Their arrays are looked up in the jobs and effects tables by
 * primary key; a plan cached while either table was small would scan it whole for every batch.
 */
export function migration7Functions(s: string): string {
  const sql = effectsSql(s);
  return `
-- reserve_effects: reserve several effects under their leases; held and reserved per position
CREATE FUNCTION ${s}.reserve_effects(keys text[], job_ids bigint[], tokens text[])
RETURNS TABLE (ord bigint, held boolean, reserved boolean)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.reserveEffectsBody)};

-- get_effects: the state and result of each of these effects that exists
CREATE FUNCTION ${s}.get_effects(keys text[])
RETURNS TABLE (effect_key text, state text, result json)
LANGUAGE plpgsql STABLE ${INDEXED}
AS ${body(sql.getEffectsBody)};

-- complete_effects: mark these leases' pending effects done; returns the keys recorded
CREATE FUNCTION ${s}.complete_effects(keys text[], job_ids bigint[], tokens text[], results json[])
RETURNS TABLE (done_key text)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.completeEffectsBody)};
`;
}

export function hotPathFunctions(s: string): string {
  const sql = jobsSql(s);
  return `
-- claim_jobs: lease up to lim due jobs (see the claim statement)
CREATE FUNCTION ${s}.claim_jobs(worker text, types text[], queues text[], lim integer, lease_ms float8)
RETURNS TABLE (${JOB_RESULT})
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.claim)};

-- heartbeat_jobs: extend the leases still held; returns their positions
CREATE FUNCTION ${s}.heartbeat_jobs(ids bigint[], tokens text[], lease_ms float8)
RETURNS TABLE (ord bigint)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.heartbeat)};

-- finish_jobs: land a batch of fenced outcomes and write their attempt rows; returns the positions that landed
CREATE FUNCTION ${s}.finish_jobs(ids bigint[], tokens text[], statuses text[], run_after_ms float8[], uncount bool[],
  has_error bool[], error_codes text[], error_messages text[], att_outcomes text[], att_error_codes text[],
  att_error_messages text[], att_error_stacks text[], att_retry_delay_ms float8[], only_if_expired bool[],
  channel text, payload text)
RETURNS TABLE (ord bigint)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(sql.finish)};
`;
}
