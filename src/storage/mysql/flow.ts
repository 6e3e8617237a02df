/**
 * The claim of one limited type on MySQL/MariaDB: core/flow.ts's plan, driven by this file's
 * reads, in one READ COMMITTED transaction that first locks the type's row of flow_buckets (made
 * on its first limited claim): the type's limited claims take turns there. Every read after the
 * lock is a statement of its own, so it sees what the previous holder committed: running counts
 * and tokens cannot change under the plan. Candidates are locked as the normal claim locks them
 * (one index-ordered scan per due status, FOR UPDATE SKIP LOCKED), so leases.ts leases the
 * picked ones with the normal claim's UPDATE, sent with the spent buckets' write and COMMIT.
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, type TypeFlow, flowPlan, runFlowPlanAsync } from '../../core/flow.js';
import type { ClaimParams } from '../../core/storage.js';
import { type Queryable, type Stmt, exec, run } from './db.js';
import { CLAIM_COLS, NOW, type Row, type Tables, compareClaimOrder, notPaused, parseUtc, utcLiteral } from './sql.js';

/** Which filters a candidate read carries (each variant is its own statement text). */
export interface CandidateShape {
  queues: boolean;
  keys: boolean;
  ids: boolean;
  /** read each job's key bucket with it (a rate per key) */
  perKey: boolean;
}

export function flowSql(t: Tables) {
  // a subquery in the select list: evaluated for returned rows only, and not locked by the outer FOR UPDATE
  const bucket = (col: string): string => `(SELECT ${col} FROM ${t.flowBuckets} b WHERE b.name = CONCAT(j.type, '|', COALESCE(j.concurrency_key, '')))`;
  const scan = (status: string, o: CandidateShape): string => `(SELECT ${CLAIM_COLS}${o.perKey ? `, ${bucket('tokens')} AS bucket_tokens, ${bucket('refilled_at')} AS bucket_at` : ''}
        FROM ${t.jobs} j FORCE INDEX (${t.jobs}_claim)
        WHERE status = '${status}' AND run_at <= CAST(? AS DATETIME(6)) AND type = ?${o.queues ? ' AND queue IN (?)' : ''} AND ${notPaused(t)}${
          o.keys ? ' AND (concurrency_key IS NULL OR concurrency_key NOT IN (?))' : ''}${o.ids ? ' AND id NOT IN (?)' : ''}
        ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)`;
  return {
    lockType: `-- leasehold claimLimited: lock the type's row of flow_buckets (its limited claims take turns) and read its bucket
      SELECT tokens, refilled_at FROM ${t.flowBuckets} WHERE name = ? FOR UPDATE`,
    // INSERT IGNORE would take a shared lock on a row another claim made meanwhile: two upgrades deadlock
    addType: `-- leasehold claimLimited: make the type's row on its first limited claim, locked (no bucket stored: full)
      INSERT INTO ${t.flowBuckets} (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name`,
    running: `-- leasehold claimLimited: the database's now and the type's running jobs per concurrency key, read under the type's lock
      SELECT ${NOW} AS db_now, r.k, r.n FROM (SELECT 1 AS one) AS one LEFT JOIN (
        SELECT concurrency_key AS k, COUNT(*) AS n FROM ${t.jobs} WHERE status = 'running' AND type = ? GROUP BY concurrency_key
      ) AS r ON 1 = 1`,
    candidates: (o: CandidateShape): string => `-- leasehold claimLimited: lock the type's next due jobs of unpaused queues in claim order, but for saturated keys and jobs already picked
      ${scan('queued', o)} UNION ALL ${scan('failed', o)}`,
    saveBuckets: (n: number): string => `-- leasehold claimLimited: write back the token buckets the claim spent
      INSERT INTO ${t.flowBuckets} (name, tokens, refilled_at) VALUES ${Array<string>(n).fill('(?, ?, CAST(? AS DATETIME(6)))').join(', ')}
      ON DUPLICATE KEY UPDATE tokens = VALUES(tokens), refilled_at = VALUES(refilled_at)`,
  };
}

export type FlowSql = ReturnType<typeof flowSql>;

/** What a limited claim leases: its picked rows (locked, in claim order), at its now, after its writes. */
export interface LimitedClaimPlan {
  picked: Row[];
  /** the claim's now, a DATETIME(6) text */
  now: string;
  /** the spent buckets' upsert, to send with the lease */
  writes: Stmt[];
}

/** Lock the type, read its state and run its plan on `c` (inside the claim's transaction); nothing is leased yet. */
export async function planLimitedClaim(c: Queryable, sql: FlowSql, p: ClaimParams, type: string, flow: TypeFlow, limit: number): Promise<LimitedClaimPlan> {
  let [lock] = await run(c, sql.lockType, [type]);
  if (!lock) {
    await exec(c, sql.addType, [type]);
    [lock] = await run(c, sql.lockType, [type]);
  }
  const counts = await run(c, sql.running, [type]);
  const now = String(counts[0]!.db_now);
  let running = 0;
  const runningByKey = new Map<string, number>();
  for (const r of counts) {
    if (r.n == null) continue;
    running += Number(r.n);
    if (r.k != null) runningByKey.set(String(r.k), Number(r.n));
  }
  const perKey = flow.rate?.perKey === true;
  const seen = new Map<string, Row>();
  const read = async (q: CandidateQuery): Promise<FlowCandidate[]> => {
    const o: CandidateShape = { queues: p.queues !== null, keys: q.excludeKeys.length > 0, ids: q.excludeIds.length > 0, perKey };
    const arm: unknown[] = [now, type, ...(o.queues ? [p.queues] : []), ...(o.keys ? [q.excludeKeys] : []), ...(o.ids ? [q.excludeIds.map(BigInt)] : []), q.window];
    // the first `window` of the two arms' first `window` each are the first `window` in claim order
    const rows = (await run(c, sql.candidates(o), [...arm, ...arm])).sort(compareClaimOrder).slice(0, q.window);
    return rows.map((r) => {
      seen.set(String(r.id), r);
      return { id: String(r.id), key: r.concurrency_key == null ? null : String(r.concurrency_key), bucket: perKey ? bucketOf(r.bucket_tokens, r.bucket_at) : undefined };
    });
  };
  const state = { running, runningByKey, typeBucket: bucketOf(lock?.tokens, lock?.refilled_at) };
  const pick = await runFlowPlanAsync(flowPlan(type, flow, state, parseUtc(now).getTime(), limit), read);
  const picked = pick.ids.map((id) => seen.get(id)!).sort(compareClaimOrder);
  const spent = [...pick.buckets].flatMap(([name, b]) => [name, b.tokens, utcLiteral(new Date(b.refilledAt))]);
  return { picked, now, writes: pick.buckets.size === 0 ? [] : [{ sql: sql.saveBuckets(pick.buckets.size), values: spent }] };
}

/** A stored bucket; none (or the type's row before its first rate-limited claim) reads as absent: full. */
function bucketOf(tokens: unknown, at: unknown): Bucket | undefined {
  return tokens == null || at == null ? undefined : { tokens: Number(tokens), refilledAt: parseUtc(at).getTime() };
}
