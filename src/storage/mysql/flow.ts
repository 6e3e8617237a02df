/**
 * The claim of one limited group (core/flow-groups.ts) on MySQL/MariaDB: core/flow.ts's plan,
 * driven by this file's reads, in one READ COMMITTED transaction that first locks the rows of the
 * group's scopes in flow_buckets, in name order (a missing row is made, outside any lock, before
 * the claim is tried again): each scope's limited claims take turns there. Every read after the
 * lock is a statement of its own, so it sees what the previous holder committed: running counts
 * and tokens cannot change under the plan. Candidates are locked as the normal claim locks them
 * (one index-ordered scan per due status, FOR UPDATE SKIP LOCKED), so leases.ts leases the
 * picked ones with the normal claim's UPDATE, sent with the spent buckets' write and COMMIT.
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, QUEUE_PREFIX, flowPlan, keyBucketName, runFlowPlanAsync } from '../../core/flow.js';
import { type FlowGroup, type RunningCount, lockNames, runningFilter, scopeStates } from '../../core/flow-groups.js';
import { type Queryable, type Stmt, run } from './db.js';
import { CLAIM_COLS, NOW, type Row, type Tables, compareClaimOrder, notPaused, parseUtc, utcLiteral } from './sql.js';

/** Which filters a candidate read carries (each variant is its own statement text). */
export interface CandidateShape {
  /** the group's queues (`in`), every queue but some (`except`), or every queue */
  queues: 'in' | 'except' | 'all';
  keys: boolean;
  types: boolean;
  typeKeys: boolean;
  ids: boolean;
  /** read each job's per-key buckets with it: its type's, its queue's */
  typeKeyBucket: boolean;
  queueKeyBucket: boolean;
}

export function flowSql(t: Tables) {
  // a subquery in the select list: evaluated for returned rows only, and not locked by the outer FOR UPDATE
  const bucket = (col: string, row: string): string => `(SELECT ${col} FROM ${t.flowBuckets} b WHERE b.name = CONCAT(${row}, '|', COALESCE(j.concurrency_key, '')))`;
  const buckets = (row: string, as: string): string => `, ${bucket('tokens', row)} AS ${as}_tokens, ${bucket('refilled_at', row)} AS ${as}_at`;
  const queueRow = `CONCAT('${QUEUE_PREFIX}', j.queue)`;
  const scan = (status: string, o: CandidateShape): string => `(SELECT ${CLAIM_COLS}${o.typeKeyBucket ? buckets('j.type', 'tk') : ''}${o.queueKeyBucket ? buckets(queueRow, 'qk') : ''}
        FROM ${t.jobs} j FORCE INDEX (${t.jobs}_claim)
        WHERE status = '${status}' AND run_at <= CAST(? AS DATETIME(6)) AND type IN (?)${o.queues === 'in' ? ' AND queue IN (?)' : o.queues === 'except' ? ' AND queue NOT IN (?)' : ''} AND ${notPaused(t)}${
          o.types ? ' AND type NOT IN (?)' : ''}${o.keys ? ' AND (concurrency_key IS NULL OR concurrency_key NOT IN (?))' : ''}${
          o.typeKeys ? ` AND (concurrency_key IS NULL OR CONCAT(type, '|', concurrency_key) NOT IN (?))` : ''}${o.ids ? ' AND id NOT IN (?)' : ''}
        ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED)`;
  return {
    lockRows: `-- leasehold claimLimited: lock the flow rows of the group's scopes in name order (their limited claims take turns) and read their buckets
      SELECT name, tokens, refilled_at FROM ${t.flowBuckets} WHERE name IN (?) ORDER BY name FOR UPDATE`,
    addRows: (n: number): string => `-- leasehold claimLimited: make the flow rows a scope's first limited claim needs (no bucket stored: full)
      INSERT INTO ${t.flowBuckets} (name) VALUES ${Array<string>(n).fill('(?)').join(', ')} ON DUPLICATE KEY UPDATE name = name`,
    running: (byType: boolean, byQueue: boolean): string => `-- leasehold claimLimited: the database's now and the running jobs of the group's limited types or queues by type, queue and concurrency key, read under their locks
      SELECT ${NOW} AS db_now, r.type, r.queue, r.k, r.n FROM (SELECT 1 AS one) AS one LEFT JOIN (
        SELECT type, queue, concurrency_key AS k, COUNT(*) AS n FROM ${t.jobs}
        WHERE status = 'running' AND (${[...(byType ? ['type IN (?)'] : []), ...(byQueue ? ['queue IN (?)'] : [])].join(' OR ')})
        GROUP BY type, queue, concurrency_key
      ) AS r ON 1 = 1`,
    candidates: (o: CandidateShape): string => `-- leasehold claimLimited: lock the group's next due jobs of unpaused queues in claim order, but for saturated keys and types and jobs already picked
      ${scan('queued', o)} UNION ALL ${scan('failed', o)}`,
    saveBuckets: (n: number): string => `-- leasehold claimLimited: write back the token buckets the claim spent
      INSERT INTO ${t.flowBuckets} (name, tokens, refilled_at) VALUES ${Array<string>(n).fill('(?, ?, CAST(? AS DATETIME(6)))').join(', ')}
      ON DUPLICATE KEY UPDATE tokens = VALUES(tokens), refilled_at = VALUES(refilled_at)`,
  };
}

export type FlowSql = ReturnType<typeof flowSql>;

/** What a limited claim leases: its picked rows (locked, in claim order), at its now, after its writes; null when a flow row is missing. */
export interface LimitedClaimPlan {
  picked: Row[];
  /** the claim's now, a DATETIME(6) text */
  now: string;
  /** the spent buckets' upsert, to send with the lease */
  writes: Stmt[];
}

/** The statement that makes a group's missing flow rows, run on its own before the claim is tried again. */
export function addRows(sql: FlowSql, group: FlowGroup): Stmt {
  const names = lockNames(group).sort();
  return { sql: sql.addRows(names.length), values: names };
}

/** Lock the group's rows, read its state and run its plan on `c` (inside the claim's transaction); nothing is leased yet. Null: a row is missing. */
export async function planLimitedClaim(c: Queryable, sql: FlowSql, group: FlowGroup, limit: number): Promise<LimitedClaimPlan | null> {
  const names = lockNames(group);
  const locked = await run(c, sql.lockRows, [names]);
  if (locked.length < names.length) return null;
  const scope = runningFilter(group);
  const counts = await run(c, sql.running(scope.types.length > 0, scope.queues.length > 0), [...(scope.types.length > 0 ? [scope.types] : []), ...(scope.queues.length > 0 ? [scope.queues] : [])]);
  const now = String(counts[0]!.db_now);
  const running: RunningCount[] = counts.flatMap((r) => (r.n == null ? [] : [{ type: String(r.type), queue: String(r.queue), key: r.k == null ? null : String(r.k), n: Number(r.n) }]));
  const perKey = (kind: 'type' | 'queue') => group.scopes.some((s) => s.kind === kind && s.flow.rate?.perKey === true);
  const [typeKeyBucket, queueKeyBucket] = [perKey('type'), perKey('queue')];
  const seen = new Map<string, Row>();
  const read = async (q: CandidateQuery): Promise<FlowCandidate[]> => {
    const o: CandidateShape = {
      queues: group.queues !== null ? 'in' : group.exceptQueues.length > 0 ? 'except' : 'all',
      keys: q.excludeKeys.length > 0, types: q.excludeTypes.length > 0, typeKeys: q.excludeTypeKeys.length > 0, ids: q.excludeIds.length > 0, typeKeyBucket, queueKeyBucket,
    };
    const arm: unknown[] = [
      now, group.types, ...(o.queues === 'in' ? [group.queues] : o.queues === 'except' ? [group.exceptQueues] : []), ...(o.types ? [q.excludeTypes] : []),
      ...(o.keys ? [q.excludeKeys] : []), ...(o.typeKeys ? [q.excludeTypeKeys] : []), ...(o.ids ? [q.excludeIds.map(BigInt)] : []), q.window,
    ];
    // the first `window` of the two arms' first `window` each are the first `window` in claim order
    const rows = (await run(c, sql.candidates(o), [...arm, ...arm])).sort(compareClaimOrder).slice(0, q.window);
    return rows.map((r) => {
      seen.set(String(r.id), r);
      const key = r.concurrency_key == null ? null : String(r.concurrency_key);
      const buckets = new Map<string, Bucket>();
      const tk = bucketOf(r.tk_tokens, r.tk_at);
      const qk = bucketOf(r.qk_tokens, r.qk_at);
      if (tk) buckets.set(keyBucketName({ kind: 'type', name: String(r.type) }, key), tk);
      if (qk) buckets.set(keyBucketName({ kind: 'queue', name: String(r.queue) }, key), qk);
      return { id: String(r.id), type: String(r.type), queue: String(r.queue), key, buckets };
    });
  };
  const rows = new Map(locked.map((r) => [String(r.name), bucketOf(r.tokens, r.refilled_at)]));
  const pick = await runFlowPlanAsync(flowPlan(group.scopes, scopeStates(group.scopes, running, rows), parseUtc(now).getTime(), limit), read);
  const picked = pick.ids.map((id) => seen.get(id)!).sort(compareClaimOrder);
  const spent = [...pick.buckets].flatMap(([name, b]) => [name, b.tokens, utcLiteral(new Date(b.refilledAt))]);
  return { picked, now, writes: pick.buckets.size === 0 ? [] : [{ sql: sql.saveBuckets(pick.buckets.size), values: spent }] };
}

/** A stored bucket; none (or a scope's row before its first rate-limited claim) reads as absent: full. */
function bucketOf(tokens: unknown, at: unknown): Bucket | undefined {
  return tokens == null || at == null ? undefined : { tokens: Number(tokens), refilledAt: parseUtc(at).getTime() };
}
