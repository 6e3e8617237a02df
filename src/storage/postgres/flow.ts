/**
 * The claim of one limited type on PostgreSQL: core/flow.ts's plan, driven by reads of this
 * file's statements, in one transaction that first locks the type's row of flow_buckets (the
 * serialisation point of the type's limited claims, made on its first one). Every read after
 * the lock is a statement of its own, so under READ COMMITTED it sees what the previous holder
 * committed: running counts and tokens cannot change under the plan. The picked jobs are
 * claimed with the normal claim's guarded UPDATE, and the buckets the plan spent are written,
 * in one statement.
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, type TypeFlow, bucketName, flowPlan, runFlowPlanAsync } from '../../core/flow.js';
import type { ClaimParams } from '../../core/storage.js';
import { query, type Db, type Prepared, type Queryable } from './db.js';
import { NOW, ms } from './sql.js';

/** A timestamptz column as epoch milliseconds, the unit of core/flow.ts's clock. */
const epochMs = (col: string): string => `round(extract(epoch FROM ${col}) * 1000)::float8`;

/** The statements of a limited claim; `claimOutput` and `claimColumns` are the normal claim's (leases.ts). */
export function flowSql(s: string, claimOutput: string, claimColumns: string) {
  return {
    /** Sent with BEGIN: index scans only, as in claim_jobs, so a table without statistics is never sorted whole per claim. */
    begin: `-- leasehold claim (limited type): open its transaction with index scans only, as claim_jobs is planned
BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`,

    /** $1 type */
    lock: `-- leasehold claim (limited type): lock the type's flow row, serialising its limited claims; its tokens when the rate is type-wide
SELECT tokens, ${epochMs('refilled_at')} AS refilled_at FROM ${s}.flow_buckets WHERE name = $1::text FOR UPDATE`,

    /** $1 type */
    ensure: `-- leasehold claim (limited type): make the type's flow row on its first limited claim (no bucket stored: full)
INSERT INTO ${s}.flow_buckets (name) VALUES ($1::text) ON CONFLICT (name) DO NOTHING`,

    /** $1 type. One row even when nothing runs (then key and n are null): it carries the clock. */
    running: `-- leasehold claim (limited type): the type's running jobs per concurrency key, and the database clock in ms
SELECT ${epochMs(NOW)} AS now_ms, r.concurrency_key, r.n
FROM (SELECT 1) AS one LEFT JOIN (
  SELECT concurrency_key, count(*)::int AS n FROM ${s}.jobs WHERE status = 'running' AND type = $1::text GROUP BY concurrency_key
) AS r ON true`,

    /** $1 type, $2 queues (null = all), $3 keys left out, $4 ids left out, $5 window */
    candidates: `-- leasehold claim (limited type): due jobs of the type in unpaused queues in claim order, leaving out saturated keys and ids already picked
SELECT id, concurrency_key FROM ${s}.jobs
WHERE status IN ('queued','failed') AND run_at <= ${NOW} AND type = $1::text
  AND ($2::text[] IS NULL OR queue = ANY($2::text[]))
  AND queue <> ALL (ARRAY(SELECT queue FROM ${s}.queue_states WHERE paused ORDER BY queue))
  AND (concurrency_key IS NULL OR concurrency_key <> ALL ($3::text[]))
  AND id <> ALL ($4::bigint[])
ORDER BY priority, run_at, id
LIMIT $5::int`,

    /** $1 bucket names */
    buckets: `-- leasehold claim (limited type): the stored token buckets among these names
SELECT name, tokens, ${epochMs('refilled_at')} AS refilled_at FROM ${s}.flow_buckets WHERE name = ANY($1::text[]) AND tokens IS NOT NULL`,

    /**
     * $1 worker id, $2 picked ids, $3 lease ms, $4 token base, $5 bucket names, $6 their tokens,
     * $7 their refill times in epoch ms. The UPDATE is the normal claim's, guarded the same way:
     * a picked job another claimer took meanwhile is left (its token stays spent: never over a limit).
     */
    claim: `-- leasehold claim (limited type): lease the jobs the flow plan picked that are still due, and store the buckets it spent
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

type FlowStatements = { begin: string } & Record<Exclude<keyof ReturnType<typeof flowSql>, 'begin'>, Prepared>;

/** A bucket as stored, or undefined when none is (tokens null: only the type's lock row). */
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
      begin: text.begin, lock: db.prepare(text.lock), ensure: db.prepare(text.ensure), running: db.prepare(text.running),
      candidates: db.prepare(text.candidates), buckets: db.prepare(text.buckets), claim: db.prepare(text.claim, 'array'),
    };
  }

  /** Claim rows (the normal claim's array rows) of `type`'s jobs its plan picks, at most `limit`, in one transaction. */
  claim(type: string, flow: TypeFlow, p: ClaimParams, limit: number, base: string): Promise<unknown[][]> {
    return this.db.transaction('claimJobs', async (c) => {
      const picked = await this.pick(c, type, flow, p, limit);
      if (picked.ids.length === 0) return [];
      const buckets = [...picked.buckets];
      const args = [p.workerId, picked.ids, p.leaseMs, base, buckets.map(([n]) => n), buckets.map(([, b]) => b.tokens), buckets.map(([, b]) => b.refilledAt)];
      return (await query(c, 'claimJobs', this.sql.claim, args)) as unknown as unknown[][];
    }, this.sql.begin);
  }

  /** Lock the type's row, read its state, run the plan. */
  private async pick(c: Queryable, type: string, flow: TypeFlow, p: ClaimParams, limit: number) {
    let [row] = await query(c, 'claimJobs', this.sql.lock, [type]);
    if (!row) {
      await query(c, 'claimJobs', this.sql.ensure, [type]);
      [row] = await query(c, 'claimJobs', this.sql.lock, [type]);
    }
    const typeBucket = bucketOf(row);
    let running = 0;
    let nowMs = 0;
    const runningByKey = new Map<string, number>();
    for (const r of await query(c, 'claimJobs', this.sql.running, [type])) {
      nowMs = Number(r.now_ms);
      running += Number(r.n ?? 0);
      if (r.concurrency_key != null) runningByKey.set(String(r.concurrency_key), Number(r.n));
    }
    const rate = flow.rate;
    const queues = p.queues ? [...p.queues] : null;
    const read = async (q: CandidateQuery): Promise<FlowCandidate[]> => {
      const rows = await query(c, 'claimJobs', this.sql.candidates, [type, queues, q.excludeKeys, q.excludeIds, q.window]);
      const candidates = rows.map((r) => ({ id: String(r.id), key: r.concurrency_key == null ? null : String(r.concurrency_key) }));
      if (!rate?.perKey) return candidates;
      const names = [...new Set(candidates.map((x) => bucketName(type, x.key, rate)))];
      const stored = new Map((await query(c, 'claimJobs', this.sql.buckets, [names])).map((r) => [String(r.name), bucketOf(r)]));
      return candidates.map((x) => ({ ...x, bucket: stored.get(bucketName(type, x.key, rate)) }));
    };
    return runFlowPlanAsync(flowPlan(type, flow, { running, runningByKey, typeBucket }, nowMs, limit), read);
  }
}
