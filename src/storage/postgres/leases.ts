/**
 * Token-fenced leases on job rows: claim, heartbeat, finish, and the sweeper's lookup of
 * expired leases. Each write is one statement, atomic on its own (data-modifying CTEs), but
 * the claim of a type or queue with flow limits, a short transaction of its own (flow.ts); a finish
 * runs on the pool or on the caller's transaction client. Row locks are taken in id
 * order everywhere, so batches over the same rows in different orders (heartbeats, finishes,
 * rescues) wait for each other instead of deadlocking. An attempt lives in its job row until
 * it ends; the finish writes its history row.
 */
import { randomBytes } from 'node:crypto';
import { type ClaimFilter, flowGroups } from '../../core/flow-groups.js';
import type { JobStatus } from '../../core/status.js';
import type {
  ClaimedJob, ClaimParams, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, LeaseRef, LeaseStore,
} from '../../core/storage.js';
import { query, txClient, type Db } from './db.js';
import { FlowClaims, INDEX_SCANS_BEGIN } from './flow.js';
import { NOW, date, dateOrNull, durationSince, ms, safeText, strOrNull, toExpiredLease, validId, waitSince } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { settleBatchesSql, settleChildrenSql } from './workflows.js';

/** What a claim sends back per job, in this order: what the worker cannot compute itself. */
export const CLAIM_COLUMNS = [
  'id', 'queue', 'type', 'payload', 'priority', 'run_at', 'attempts', 'max_attempts', 'idempotency_key',
  'locked_until', 'started_at', 'finished_at', 'last_error_code', 'last_error', 'timeout_ms',
  'max_runtime_ms', 'created_at', 'schedule_name', 'slot_at', 'trace_context', 'concurrency_key', 'unique_key',
] as const;

const claimColumns = (alias: string): string => CLAIM_COLUMNS.map((c) => `${alias}.${c}`).join(', ');

const CLAIM_TIMES: ReadonlySet<string> = new Set(['run_at', 'locked_until', 'started_at', 'finished_at', 'created_at', 'slot_at']);
/** The claim's columns as the worker reads them: times as epoch milliseconds, since parsing timestamptz text is most of a claim row's client-side cost. */
const claimOutput = CLAIM_COLUMNS.map((c) => (CLAIM_TIMES.has(c) ? `round(extract(epoch FROM ${c}) * 1000)::float8 AS ${c}` : c)).join(', ');

/**
 * $1 worker id, $2 types, $3 queues (null = all), $4 limit, $5 lease ms, $6 the claim's token
 * base; with `except`, $7 queues left out. `picked` is the in-order scan of jobs_due_idx that
 * stops after $4 rows. The update takes the picked ids as an array, not as a join, so no plan
 * joins them to the whole table. Paused queues are read once per claim into an array (an
 * InitPlan; in key order, so the primary key serves it where the function forbids sequential
 * scans), not probed per row. Without `except` it runs as the body of the claim_jobs function
 * (migrations.ts says why): a change there needs a migration that replaces the function.
 */
function claimText(s: string, except: boolean): string {
  return `-- leasehold claim: lease up to $4 due jobs of unpaused queues${except ? ' but $7' : ''} in claim order, skipping rows other claimers hold; each token is the base $6 and the id
WITH picked AS (
  SELECT id FROM ${s}.jobs
  WHERE status IN ('queued','failed') AND run_at <= ${NOW}
    AND type = ANY($2::text[]) AND ($3::text[] IS NULL OR queue = ANY($3::text[]))
    AND queue <> ALL (ARRAY(SELECT queue FROM ${s}.queue_states WHERE paused ORDER BY queue))${except ? '\n    AND queue <> ALL ($7::text[])' : ''}
  ORDER BY priority, run_at, id
  LIMIT $4::int
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ${s}.jobs j
  SET status = 'running', locked_by = $1::text, lease_token = $6::text || '.' || j.id::text,
      locked_until = ${NOW} + ${ms('$5::float8')}, heartbeat_at = ${NOW}, started_at = ${NOW},
      attempts = j.attempts + 1, updated_at = ${NOW}
  WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
  RETURNING ${claimColumns('j')}
)
SELECT ${except ? claimOutput : claimColumns('claimed')} FROM claimed ORDER BY priority, run_at, id`;
}

export function leasesSql(s: string) {
  return {
    /** The body of the claim_jobs function (see claimText). */
    claim: claimText(s, false),

    /** The claim of free types beside limited queues: `claim` with $7, queues left out; run in a transaction with index scans only (flow.ts). */
    claimExcept: claimText(s, true),

    /** The claim through its function (the baseline migration makes `claim` its body): the parameters of `claim`. */
    claimCall: `-- leasehold claim: lease up to $4 due jobs in claim order (the claim_jobs function)
SELECT ${claimOutput} FROM ${s}.claim_jobs($1::text, $2::text[], $3::text[], $4::int, $5::float8, $6::text)`,

    /**
     * $1 ids, $2 tokens, $3 lease ms. Returns the input positions (1-based) of the leases it
     * extended. No two CTEs are joined: a cached plan cannot know the batch size, and stays
     * right for 1 row or 500.
     */
    heartbeat: `-- leasehold heartbeat: extend the leases still held (id + token + running); return their positions
WITH locked AS (
  SELECT j.id, j.lease_token, j.status, i.token, i.ord
  FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS i(id, token, ord)
  JOIN ${s}.jobs j ON j.id = i.id
  ORDER BY j.id FOR UPDATE OF j
), extended AS (
  UPDATE ${s}.jobs j
  SET locked_until = ${NOW} + ${ms('$3::float8')}, heartbeat_at = ${NOW}, updated_at = ${NOW}
  FROM locked l
  WHERE j.id = l.id AND l.lease_token = l.token AND l.status = 'running'
  RETURNING l.ord
)
SELECT ord FROM extended`,

    /** $1 ids. A statement of its own: its snapshot comes after the heartbeat waited out a concurrent finish, so a rescued lease reports the rescued status. */
    statuses: `-- leasehold heartbeat (lost leases): the current status of these jobs
SELECT id::text AS id, status FROM ${s}.jobs WHERE id = ANY($1::bigint[])`,

    /**
     * $1 ids, $2 tokens, $3 statuses, $4 run_after_ms (null: keep run_at), $5 uncount attempt,
     * $6 has error, $7 $8 error code and message, $9 attempt outcomes, $10 $11 $12 attempt error
     * code, message and stack, $13 retry delays, $14 only if expired, $15 $16 notify, $17 results
     * (JSON text, succeeded items only). Returns the
     * input positions (1-based) that landed. An optional array may be shorter than $1 (even
     * empty): unnest pads it with NULLs, read as "none" (and false for the booleans). The fence
     * is checked on the values `locked` read under the row lock (the latest committed version).
     */
    finish: `-- leasehold finish: land each fenced outcome (id + token + running, expired if asked), write its attempt row, notify if a job is due again
WITH RECURSIVE items AS (
  SELECT *
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::float8[], $5::bool[], $6::bool[],
              $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
              $13::float8[], $14::bool[], $17::text[])
       WITH ORDINALITY AS i(item_id, token, status, run_after_ms, uncount, has_error, error_code,
                            error_message, att_outcome, att_error_code, att_error_message,
                            att_error_stack, att_retry_delay_ms, only_if_expired, result_json, ord)
), locked AS (
  SELECT j.id, j.lease_token, j.status AS was, j.locked_until, j.locked_by, j.attempts, j.started_at, j.run_at AS due_at, i.*
  FROM items i JOIN ${s}.jobs j ON j.id = i.item_id
  ORDER BY j.id FOR UPDATE OF j
), fenced AS (
  -- a job named twice lands by the first item that holds its lease; the later ones find it no longer running
  SELECT DISTINCT ON (id) * FROM locked
  WHERE lease_token = token AND was = 'running' AND (NOT coalesce(only_if_expired, false) OR locked_until < ${NOW})
  ORDER BY id, ord
), upd AS (
  UPDATE ${s}.jobs j
  SET status = l.status,
      run_at = CASE WHEN l.run_after_ms IS NULL THEN j.run_at ELSE ${NOW} + ${ms('l.run_after_ms')} END,
      attempts = CASE WHEN l.uncount THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
      last_error_code = CASE WHEN l.has_error THEN l.error_code ELSE j.last_error_code END,
      last_error = CASE WHEN l.has_error THEN l.error_message ELSE j.last_error END,
      locked_by = NULL, lease_token = NULL, locked_until = NULL,
      finished_at = CASE WHEN l.status IN ('succeeded','dead','cancelled') THEN ${NOW} END,
      updated_at = ${NOW}, result = l.result_json::json
  FROM fenced l
  WHERE j.id = l.id
  RETURNING l.ord, j.id, j.status, j.run_at, j.dependents, j.batch_id, l.attempts, l.locked_by, l.lease_token, l.started_at, l.due_at,
            l.att_outcome, l.att_error_code, l.att_error_message, l.att_error_stack, l.att_retry_delay_ms
), closed AS (
  -- due_at: the job's run_at as the claim found it, which nothing changes while it runs
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms)
  SELECT id, attempts, locked_by, lease_token, started_at, ${NOW}, ${durationSince('started_at')},
         att_outcome, att_error_code, att_error_message, att_error_stack, round(att_retry_delay_ms)::bigint,
         ${waitSince('due_at', 'started_at')}
  FROM upd
)${settleChildrenSql(s)}${settleBatchesSql(s)}, woke AS (
  SELECT pg_notify($15, $16)
  FROM (SELECT 1 FROM upd WHERE upd.status IN ('queued','failed') AND upd.run_at <= ${NOW}
        UNION ALL SELECT 1 FROM settled WHERE settled.status = 'queued' AND settled.run_at <= ${NOW}
        UNION ALL SELECT 1 FROM fired WHERE fired.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT ord FROM upd CROSS JOIN (SELECT count(*) FROM woke) AS notified`,

    /** $1 limit, $2 types (null: all) */
    findExpired: `-- leasehold sweep: running jobs whose lease has expired, of the types in $2 when not null, oldest lease first
SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM ${s}.jobs
WHERE status = 'running' AND locked_until < ${NOW} AND ($2::text[] IS NULL OR type = ANY($2::text[]))
ORDER BY locked_until, id
LIMIT $1::int`,
  };
}

/** A claimed job from a claim row (CLAIM_COLUMNS, as an array): the rest is the claim's own doing. */
function toClaimedJob(r: unknown[], workerId: string, base: string): ClaimedJob {
  const startedAt = date(r[10]);
  const id = String(r[0]);
  const job: ClaimedJob = {
    id, queue: String(r[1]), type: String(r[2]), payload: r[3], status: 'running', priority: Number(r[4]), runAt: date(r[5]),
    attempts: Number(r[6]), maxAttempts: Number(r[7]), idempotencyKey: strOrNull(r[8]), lockedBy: workerId,
    leaseToken: `${base}.${id}`, lockedUntil: date(r[9]), heartbeatAt: new Date(startedAt.getTime()), startedAt,
    finishedAt: dateOrNull(r[11]), lastErrorCode: strOrNull(r[12]), lastError: strOrNull(r[13]), timeoutMs: Number(r[14]),
    maxRuntimeMs: Number(r[15]), createdAt: date(r[16]), updatedAt: new Date(startedAt.getTime()),
  };
  // only jobs a schedule enqueued carry their slot
  if (r[17] != null && r[18] != null) {
    job.scheduleName = String(r[17]);
    job.slotAt = date(r[18]);
  }
  if (r[19] != null) job.traceContext = String(r[19]);
  if (r[20] != null) job.concurrencyKey = String(r[20]);
  if (r[21] != null) job.uniqueKey = String(r[21]);
  return job;
}

export class PostgresLeases extends SqlAggregate<Db, ReturnType<typeof leasesSql>> implements LeaseStore {
  private readonly hot = { claim: this.db.prepare(this.sql.claimCall, 'array'), claimExcept: this.db.prepare(this.sql.claimExcept, 'array'), heartbeat: this.db.prepare(this.sql.heartbeat), finish: this.db.prepare(this.sql.finish) };
  private readonly flow = new FlowClaims(this.db, claimOutput, claimColumns('j'));

  constructor(db: Db) {
    super(db, leasesSql(db.q));
  }

  /** Limited groups first (limited queues, then types), each in a transaction of its own (flow.ts); the free part, with what is left of the limit, in one statement. */
  async claim(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.limit <= 0 || p.types.length === 0) return [];
    // a fresh base per claim, 128 random bits: a token is unique per attempt, as the id differs within a claim
    const base = randomBytes(16).toString('base64url');
    const { limited, free } = flowGroups(p);
    if (limited.length === 0) return free ? this.claimFree(p, free, p.limit, base) : [];
    const rows: unknown[][] = [];
    for (const g of limited) {
      if (rows.length >= p.limit) break;
      rows.push(...(await this.flow.claim(g, p, p.limit - rows.length, base)));
    }
    const claimed = rows.map((r) => toClaimedJob(r, p.workerId, base));
    if (!free || claimed.length >= p.limit) return claimed;
    return [...claimed, ...(await this.claimFree(p, free, p.limit - claimed.length, base))];
  }

  /** The claim of the free part: one call of claim_jobs; beside limited queues, its statement leaving them out, planned the same way. */
  private async claimFree(p: ClaimParams, f: ClaimFilter, limit: number, base: string): Promise<ClaimedJob[]> {
    const params = [p.workerId, f.types, f.queues, limit, p.leaseMs, base];
    const rows = f.exceptQueues.length === 0
      ? await this.db.run('claimJobs', this.hot.claim, params)
      : await this.db.transaction('claimJobs', (c) => query(c, 'claimJobs', this.hot.claimExcept, [...params, f.exceptQueues]), INDEX_SCANS_BEGIN);
    return (rows as unknown as unknown[][]).map((r) => toClaimedJob(r, p.workerId, base));
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    const valid = p.leases.filter((l) => validId(l.id) !== null);
    const lost = new Set<LeaseRef>(p.leases.filter((l) => validId(l.id) === null));
    const status = new Map<string, JobStatus>();
    if (valid.length > 0) {
      const rows = await this.db.run('heartbeat', this.hot.heartbeat, [valid.map((l) => validId(l.id)), valid.map((l) => l.leaseToken), p.leaseMs]);
      const extended = new Set(rows.map((r) => Number(r.ord) - 1));
      const lostValid = valid.filter((_, i) => !extended.has(i));
      for (const l of lostValid) lost.add(l);
      if (lostValid.length > 0) {
        for (const r of await this.db.run('heartbeat', this.sql.statuses, [lostValid.map((l) => validId(l.id))])) status.set(String(r.id), r.status as JobStatus);
      }
    }
    // in input order; a job that is gone reports null
    return { lost: p.leases.filter((l) => lost.has(l)).map((l) => ({ id: l.id, status: status.get(validId(l.id) ?? '') ?? null })) };
  }

  async finish(p: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]> {
    const on = txClient(p.tx);
    const items = p.items.filter((f) => validId(f.id) !== null);
    const applied = new Set<FinishParams>();
    if (items.length > 0) {
      // an optional column goes as [] when no item has a value (unnest pads it with NULLs)
      const opt = <T>(f: (x: FinishParams) => T | null | undefined): (T | null)[] => {
        const out = items.map((x) => f(x) ?? null);
        return out.some((v) => v !== null && v !== false) ? out : [];
      };
      const args = [
        items.map((f) => validId(f.id)), items.map((f) => f.leaseToken), items.map((f) => f.status),
        opt((f) => f.runAfterMs ?? null), opt((f) => f.uncountAttempt === true),
        opt((f) => f.error != null), opt((f) => safeText(f.error?.code)), opt((f) => safeText(f.error?.message)),
        items.map((f) => f.attempt.outcome), opt((f) => safeText(f.attempt.error?.code)),
        opt((f) => safeText(f.attempt.error?.message)), opt((f) => safeText(f.attempt.error?.stack)),
        opt((f) => f.attempt.retryDelayMs ?? null), opt((f) => f.onlyIfExpired === true),
        ...this.db.notify, opt((f) => f.result ?? null),
      ];
      for (const r of await this.db.run('finishJobs', this.hot.finish, args, on)) applied.add(items[Number(r.ord) - 1] as FinishParams);
    }
    return p.items.map((f) => ({ id: f.id, applied: applied.has(f) }));
  }

  async findExpired(p: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
    if (p.limit <= 0 || p.types?.length === 0) return [];
    const rows = await this.db.run('findExpiredLeases', this.sql.findExpired, [p.limit, p.types === undefined ? null : [...p.types]]);
    return rows.map(toExpiredLease);
  }
}
