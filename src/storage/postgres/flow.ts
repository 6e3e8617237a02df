/**
 * The claim of one limited group (core/flow-groups.ts) on PostgreSQL: core/flow.ts's plan,
 * driven by reads of this file's statements, in one transaction that first locks the rows of
 * the group's scopes in flow_buckets, in name order (the serialisation point of each scope's
 * limited claims; a missing row is made, outside any lock, before the claim is tried again).
 * Every read after the lock is a statement of its own, so under READ COMMITTED it sees what the
 * previous holder committed: running counts and tokens cannot change under the plan. The picked
 * jobs are claimed with the normal claim's guarded UPDATE, and the buckets the plan spent are
 * written, in one statement.
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, type FlowPick, flowPlan, runFlowPlanAsync } from '../../core/flow.js';
import { type FlowGroup, keyBucketNames, lockNames, runningFilter, scopeStates } from '../../core/flow-groups.js';
import type { ClaimParams } from '../../core/storage.js';
import { query, type Db, type Prepared, type Queryable } from './db.js';
import { NOW, ms } from './sql.js';

/** A timestamptz column as epoch milliseconds, the unit of core/flow.ts's clock. */
const epochMs = (col: string): string => `round(extract(epoch FROM ${col}) * 1000)::float8`;

/** Sent with BEGIN: index scans only, as in claim_jobs, so a table without statistics is never sorted whole per claim. */
export const INDEX_SCANS_BEGIN = `-- leasehold claim (limited): open its transaction with index scans only and no JIT, as claim_jobs is planned
BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off`;

/** The statements of a limited claim; `claimOutput` and `claimColumns` are the normal claim's (leases.ts). */
export function flowSql(s: string, claimOutput: string, claimColumns: string) {
  return {
    /** $1 row names. One statement in name order: every claim locks its rows in the same order. */
    lock: `-- leasehold claim (limited): lock the flow rows of the group's scopes in name order, serialising their limited claims; their scope-wide tokens
SELECT name, tokens, ${epochMs('refilled_at')} AS refilled_at FROM ${s}.flow_buckets WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`,

    /** $1 row names */
    ensure: `-- leasehold claim (limited): make the flow rows a scope's first limited claim needs (no bucket stored: full)
INSERT INTO ${s}.flow_buckets (name) SELECT n FROM unnest($1::text[]) AS n ORDER BY n ON CONFLICT (name) DO NOTHING`,

    /** $1 types, $2 queues. One row even when nothing runs (then the rest is null): it carries the clock. */
    running: `-- leasehold claim (limited): running jobs of these types or in these queues by type, queue and concurrency key, and the database clock in ms
SELECT ${epochMs(NOW)} AS now_ms, r.type, r.queue, r.concurrency_key, r.n
FROM (SELECT 1) AS one LEFT JOIN (
  SELECT type, queue, concurrency_key, count(*)::int AS n FROM ${s}.jobs
  WHERE status = 'running' AND (type = ANY($1::text[]) OR queue = ANY($2::text[]))
  GROUP BY type, queue, concurrency_key
) AS r ON true`,

    /** $1 types, $2 queues (null = all but $3), $3 queues left out, $4 keys, $5 types, $6 type|key pairs, $7 ids left out, $8 window */
    candidates: `-- leasehold claim (limited): due jobs of the group in unpaused queues in claim order, leaving out saturated keys and types and ids already picked
SELECT id, type, queue, concurrency_key FROM ${s}.jobs
WHERE status IN ('queued','failed') AND run_at <= ${NOW} AND type = ANY($1::text[])
  AND ($2::text[] IS NULL OR queue = ANY($2::text[])) AND queue <> ALL ($3::text[])
  AND queue <> ALL (ARRAY(SELECT queue FROM ${s}.queue_states WHERE paused ORDER BY queue))
  AND type <> ALL ($5::text[])
  AND (concurrency_key IS NULL OR (concurrency_key <> ALL ($4::text[]) AND type || '|' || concurrency_key <> ALL ($6::text[])))
  AND id <> ALL ($7::bigint[])
ORDER BY priority, run_at, id
LIMIT $8::int`,

    /** $1 bucket names */
    buckets: `-- leasehold claim (limited): the stored token buckets among these names
SELECT name, tokens, ${epochMs('refilled_at')} AS refilled_at FROM ${s}.flow_buckets WHERE name = ANY($1::text[]) AND tokens IS NOT NULL`,

    /**
     * $1 worker id, $2 picked ids, $3 lease ms, $4 token base, $5 bucket names, $6 their tokens,
     * $7 their refill times in epoch ms. The UPDATE is the normal claim's, guarded the same way:
     * a picked job another claimer took meanwhile is left (its token stays spent: never over a limit).
     */
    claim: `-- leasehold claim (limited): lease the jobs the flow plan picked that are still due, and store the buckets it spent
WITH claimed AS (
  UPDATE ${s}.jobs j
  SET status = 'running', locked_by = $1::text, lease_token = $4::text || '.' || j.id::text,
      locked_until = ${NOW} + ${ms('$3::float8')}, heartbeat_at = ${NOW}, started_at = ${NOW},
      attempts = j.attempts + 1, updated_at = ${NOW}
  WHERE j.id = ANY ($2::bigint[]) AND j.status IN ('queued','failed') AND j.run_at <= ${NOW}
  RETURNING ${claimColumns}
), spent AS (
  INSERT INTO ${s}.flow_buckets (name, tokens, refilled_at)
  SELECT b.name, b.tokens, to_timestamp(b.refilled_ms / 1000.0) FROM unnest($5::text[], $6::float8[], $7::float8[]) AS b(name, tokens, refilled_ms)
  ON CONFLICT (name) DO UPDATE SET tokens = EXCLUDED.tokens, refilled_at = EXCLUDED.refilled_at
)
SELECT ${claimOutput} FROM claimed ORDER BY priority, run_at, id`,
  };
}

type FlowStatements = Record<keyof ReturnType<typeof flowSql>, Prepared>;

/** A bucket as stored, or undefined when none is (tokens null: only the scope's lock row). */
function bucketOf(r: Record<string, unknown> | undefined): Bucket | undefined {
  return r && r.tokens != null ? { tokens: Number(r.tokens), refilledAt: Number(r.refilled_at) } : undefined;
}

/** Limited claims of one storage: its statements, prepared (unnamed behind a transaction pooler). */
export class FlowClaims {
  private readonly sql: FlowStatements;

  constructor(
    private readonly db: Db,
    claimOutput: string,
    claimColumns: string,
  ) {
    const text = flowSql(db.q, claimOutput, claimColumns);
    this.sql = {
      lock: db.prepare(text.lock), ensure: db.prepare(text.ensure), running: db.prepare(text.running),
      candidates: db.prepare(text.candidates), buckets: db.prepare(text.buckets), claim: db.prepare(text.claim, 'array'),
    };
  }

  /** Claim rows (the normal claim's array rows) of the group's jobs its plan picks, at most `limit`, in one transaction. */
  async claim(group: FlowGroup, p: ClaimParams, limit: number, base: string): Promise<unknown[][]> {
    const names = lockNames(group);
    let rows = await this.tryClaim(group, names, p, limit, base);
    if (rows === null) {
      // made outside the claim's transaction: a claim never waits for a row while holding another
      await this.db.run('claimJobs', this.sql.ensure, [names]);
      rows = await this.tryClaim(group, names, p, limit, base);
    }
    return rows ?? [];
  }

  /** The claim, or null when a row of the group's scopes is missing (nothing claimed). */
  private tryClaim(group: FlowGroup, names: string[], p: ClaimParams, limit: number, base: string): Promise<unknown[][] | null> {
    return this.db.transaction('claimJobs', async (c) => {
      const locked = await query(c, 'claimJobs', this.sql.lock, [names]);
      if (locked.length < names.length) return null;
      const picked = await this.pick(c, group, new Map(locked.map((r) => [String(r.name), bucketOf(r)])), limit);
      if (picked.ids.length === 0) return [];
      const buckets = [...picked.buckets];
      const args = [p.workerId, picked.ids, p.leaseMs, base, buckets.map(([n]) => n), buckets.map(([, b]) => b.tokens), buckets.map(([, b]) => b.refilledAt)];
      return (await query(c, 'claimJobs', this.sql.claim, args)) as unknown as unknown[][];
    }, INDEX_SCANS_BEGIN);
  }

  /** Read the group's state under its locks, run the plan. */
  private async pick(c: Queryable, group: FlowGroup, rows: Map<string, Bucket | undefined>, limit: number): Promise<FlowPick> {
    const scope = runningFilter(group);
    let nowMs = 0;
    const running = (await query(c, 'claimJobs', this.sql.running, [scope.types, scope.queues])).flatMap((r) => {
      nowMs = Number(r.now_ms);
      return r.n == null ? [] : [{ type: String(r.type), queue: String(r.queue), key: r.concurrency_key == null ? null : String(r.concurrency_key), n: Number(r.n) }];
    });
    const read = async (q: CandidateQuery): Promise<FlowCandidate[]> => {
      const args = [group.types, group.queues, group.exceptQueues, q.excludeKeys, q.excludeTypes, q.excludeTypeKeys, q.excludeIds, q.window];
      const candidates = (await query(c, 'claimJobs', this.sql.candidates, args)).map((r) => ({
        id: String(r.id), type: String(r.type), queue: String(r.queue), key: r.concurrency_key == null ? null : String(r.concurrency_key),
      }));
      const names = keyBucketNames(group.scopes, candidates);
      if (names.length === 0) return candidates;
      const buckets = new Map((await query(c, 'claimJobs', this.sql.buckets, [names])).map((r) => [String(r.name), bucketOf(r) as Bucket]));
      return candidates.map((x) => ({ ...x, buckets }));
    };
    return runFlowPlanAsync(flowPlan(group.scopes, scopeStates(group.scopes, running, rows), nowMs, limit), read);
  }
}
