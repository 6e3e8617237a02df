/**
 * The hot path as server-side functions: claim, heartbeat and finish, and the effect ledger's
 * batches, each one call with planner settings attached, so their plans do not depend on
 * planner statistics a young or bulk-loaded table lacks. The bodies are the statements of
 * leases.ts and effects.ts ($1… are the function's arguments).
 */
import { effectsSql } from './effects.js';
import { CLAIM_COLUMNS, leasesSql } from './leases.js';

/** Index scans only, and a generic plan planned once per connection (plpgsql: an SQL function would plan its body on every call). */
const INDEXED = 'SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan';
// use_column: the result columns' names (id, ord…) would otherwise clash with the tables' columns in the body
const body = (stmt: string): string => `$fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
${stmt};
END
$fn$`;

const CLAIM_TYPES: Record<(typeof CLAIM_COLUMNS)[number], string> = {
  id: 'bigint', queue: 'text', type: 'text', payload: 'json', priority: 'integer', run_at: 'timestamptz', attempts: 'integer',
  max_attempts: 'integer', idempotency_key: 'text', locked_until: 'timestamptz', started_at: 'timestamptz', finished_at: 'timestamptz',
  last_error_code: 'text', last_error: 'text', timeout_ms: 'bigint', max_runtime_ms: 'bigint', created_at: 'timestamptz',
  schedule_name: 'text', slot_at: 'timestamptz',
};

export function hotPathFunctions(s: string): string {
  const sql = leasesSql(s);
  const fx = effectsSql(s);
  return `
-- claim_jobs: lease up to lim due jobs, tokens made from token_base and the id
CREATE FUNCTION ${s}.claim_jobs(worker text, types text[], queues text[], lim integer, lease_ms float8, token_base text)
RETURNS TABLE (${CLAIM_COLUMNS.map((c) => `${c} ${CLAIM_TYPES[c]}`).join(', ')})
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

-- reserve_effects: reserve several effects under their leases; held and reserved per position
CREATE FUNCTION ${s}.reserve_effects(keys text[], job_ids bigint[], tokens text[])
RETURNS TABLE (ord bigint, held boolean, reserved boolean)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(fx.reserveMany)};

-- get_effects: the state and result of each of these effects that exists
CREATE FUNCTION ${s}.get_effects(keys text[])
RETURNS TABLE (effect_key text, state text, result json)
LANGUAGE plpgsql STABLE ${INDEXED}
AS ${body(fx.stateMany)};

-- complete_effects: mark these leases' pending effects done; returns the keys recorded
CREATE FUNCTION ${s}.complete_effects(keys text[], job_ids bigint[], tokens text[], results json[])
RETURNS TABLE (done_key text)
LANGUAGE plpgsql VOLATILE ${INDEXED}
AS ${body(fx.completeMany)};
`;
}
