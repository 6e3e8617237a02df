/**
 * What a parent's end does to its waiting children on PostgreSQL: the settle_children function
 * (in the baseline migration) and the CTE by which a finish, a cancel or a bulk cancel calls it.
 */
import { FLOW_LIMITS } from '../../core/workflow-graph.js';
import { NOW } from './sql.js';

/**
 * The finish's CTE after `upd` (the landed jobs, with their dependents): the landed parents'
 * children settled by settle_children, called only when one has dependents. A function, so its
 * statement reads with a snapshot taken after `upd` locked the parents: it sees the edges and
 * children an insertFlow naming a stored parent committed while this statement waited for its lock.
 */
export const settleChildrenSql = (s: string): string => `, settled AS (
  SELECT f.* FROM (SELECT 1 WHERE EXISTS (SELECT 1 FROM upd WHERE upd.dependents IS NOT NULL)) AS any_parent
  CROSS JOIN LATERAL ${s}.settle_children(
    ARRAY(SELECT id FROM upd WHERE upd.dependents IS NOT NULL ORDER BY id), ARRAY(SELECT status FROM upd WHERE upd.dependents IS NOT NULL ORDER BY id)) AS f
)`;

/**
 * The children of parents that ended (ids with their new statuses): the waiting children of
 * parents that succeeded lose one pending parent each (at 0: queued, due no earlier than now);
 * the waiting descendants of parents that ended dead or cancelled, under policy 'cancel', are
 * cancelled. Children are locked in id order (`kids`), as every finisher locks rows.
 */
export const settleChildrenFunction = (s: string): string => `
-- settle_children: what the end of these parents does to their waiting children (settleChildrenSql)
CREATE FUNCTION ${s}.settle_children(parent_ids bigint[], parent_statuses text[])
RETURNS TABLE (status text, run_at timestamptz, batch_id bigint)
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE ended AS (
  SELECT * FROM unnest(parent_ids, parent_statuses) AS e(id, how)
), released AS (
  SELECT d.child_id AS id, count(*)::int AS n
  FROM ended u JOIN ${s}.job_dependencies d ON d.parent_id = u.id
  WHERE u.how = 'succeeded'
  GROUP BY d.child_id
), doomed(id, cause, how) AS (
  SELECT d.child_id, u.id, u.how FROM ended u JOIN ${s}.job_dependencies d ON d.parent_id = u.id
  WHERE u.how IN ('dead','cancelled')
  UNION
  -- lateral, so each step reads its parents' children by the primary key whatever the estimates
  SELECT d.child_id, x.cause, x.how FROM doomed x
  CROSS JOIN LATERAL (SELECT child_id FROM ${s}.job_dependencies WHERE parent_id = x.id LIMIT ${FLOW_LIMITS.jobs}) d
), touched AS (
  SELECT t.id, max(t.n) AS n, min(t.cause) AS cause, min(t.how) AS how
  FROM (SELECT id, n, NULL::bigint AS cause, NULL::text AS how FROM released UNION ALL SELECT id, 0, cause, how FROM doomed) t
  GROUP BY t.id
), kids AS (
  -- the children as an array of ids, not a join: no plan reads the whole table for them
  SELECT c.id, c.status, c.pending_parents, c.parent_policy FROM ${s}.jobs c
  WHERE c.id = ANY (ARRAY(SELECT id FROM touched))
  ORDER BY c.id FOR UPDATE OF c
), settle AS (
  SELECT k.id, k.pending_parents - t.n AS left_parents, (t.cause IS NOT NULL AND k.parent_policy = 'cancel') AS doomed, t.cause, t.how
  FROM kids k JOIN touched t ON t.id = k.id
  WHERE k.status = 'waiting'
), settled AS (
  UPDATE ${s}.jobs c
  SET status = CASE WHEN k.doomed THEN 'cancelled' WHEN k.left_parents <= 0 THEN 'queued' ELSE 'waiting' END,
      pending_parents = k.left_parents,
      run_at = CASE WHEN NOT k.doomed AND k.left_parents <= 0 THEN greatest(c.run_at, ${NOW}) ELSE c.run_at END,
      finished_at = CASE WHEN k.doomed THEN ${NOW} END,
      last_error_code = CASE WHEN k.doomed THEN 'PARENT_FAILED' ELSE c.last_error_code END,
      last_error = CASE WHEN k.doomed THEN 'job ' || k.cause || ' it depends on ended ' || k.how ELSE c.last_error END,
      updated_at = ${NOW}
  FROM settle k
  WHERE c.id = ANY (ARRAY(SELECT id FROM settle)) AND c.id = k.id
  RETURNING c.status, c.run_at, c.batch_id
)
SELECT x.status, x.run_at::timestamptz, x.batch_id FROM settled x;
END
$fn$;
`;
