/**
 * The hot-path SQL for jobs: claim, heartbeat, finish, find expired leases (the inserts are in
 * postgres-sql-insert.ts). Each
 * statement is one round trip and atomic on its own (data-modifying CTEs), and starts with a
 * one-line `--` header saying what it does (it also shows in pg_stat_activity and logs).
 * Every time decision uses the database clock `now()`; callers pass durations in ms.
 * `s` is the quoted schema name.
 */
import { JOB_COLUMNS, NOW, durationSince, ms } from './sql.js';


/** A fresh lease token: 128 bits, hex, from two v4 UUIDs (244 random bits) folded by md5. */
export const LEASE_TOKEN_SQL = 'md5(gen_random_uuid()::text || gen_random_uuid()::text)';

/**
 * What a claim sends back per job, in this order: what the worker cannot know. `started_at` is
 * the claim's `now`, heartbeat_at and updated_at equal it; the lease token is the caller's base
 * and the id (`claimWithBase`).
 */
export const CLAIM_COLUMNS = [
  'id', 'queue', 'type', 'payload', 'priority', 'run_at', 'attempts', 'max_attempts', 'idempotency_key',
  'locked_until', 'started_at', 'finished_at', 'last_error_code', 'last_error', 'timeout_ms',
  'max_runtime_ms', 'created_at', 'schedule_name', 'slot_at',
] as const;

/**
 * The start of both success finishes (`finishSucceededUnlocked`, `finishSucceededBy`): the
 * items sorted by id, so that the update visits, and locks, the rows in id order; and what a
 * success sets.
 */
const successItemsAndSet = (s: string): string => `WITH items AS (
  SELECT i.item_id, i.token, i.ord
  FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS i(item_id, token, ord)
  ORDER BY i.item_id
), upd AS (
  UPDATE ${s}.jobs j
  SET status = 'succeeded', locked_by = NULL, lease_token = NULL, locked_until = NULL,
      finished_at = ${NOW}, updated_at = ${NOW}
`;

/**
 * The claim statement, with `token` as the SQL of each row's lease token (see `claim` and
 * `claimWithBase`) and `columns` the job columns it returns. `s` is the quoted schema name.
 */
function claimStatement(s: string, token: string, columns: readonly string[]): string {
  const cols = (alias: string): string => columns.map((c) => `${alias}.${c}`).join(', ');
  return `-- leasehold claim: lease up to $4 due jobs in claim order, skipping rows other claimers hold (the attempt lives in the job row until it ends)
WITH picked AS (
  SELECT id FROM ${s}.jobs
  WHERE status IN ('queued','failed') AND run_at <= ${NOW}
    AND type = ANY($2::text[]) AND ($3::text[] IS NULL OR queue = ANY($3::text[]))
  ORDER BY priority, run_at, id
  LIMIT $4::int
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE ${s}.jobs j
  SET status = 'running', locked_by = $1::text, lease_token = ${token},
      locked_until = ${NOW} + ${ms('$5::float8')}, heartbeat_at = ${NOW}, started_at = ${NOW},
      attempts = j.attempts + 1, updated_at = ${NOW}
  WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
  RETURNING ${cols('j')}
)
SELECT ${cols('claimed')} FROM claimed ORDER BY priority, run_at, id`;
}

export function jobsSql(s: string) {
  return {
    /**
     * $1 worker id, $2 types, $3 queues (null = all), $4 limit, $5 lease ms. The inner SELECT is
     * the one the partial index jobs_due_idx serves (see `claimPick` for EXPLAIN). The update
     * takes the picked ids as an array, not as a join: a cached plan joined them by merge join
     * over the whole primary key once statistics said the table held little but due rows
     * (60,000 index entries read per claim of 300, slower with every claim of a drain).
     */
    claim: claimStatement(s, LEASE_TOKEN_SQL, JOB_COLUMNS),

    /**
     * The claim with lease tokens made from the caller's $6, a fresh random base per claim, and
     * each row's id (migration 4): one string concatenation per row instead of two random UUIDs
     * and an md5, which were a tenth of the server's CPU in a drain. A token stays unique per
     * attempt: a base is never reused (128 random bits) and the id differs within a claim.
     * Returns only the CLAIM_COLUMNS (what the worker cannot compute).
     */
    claimWithBase: claimStatement(s, `$6::text || '.' || j.id::text`, CLAIM_COLUMNS),

    /** $1 types, $2 queues, $3 limit: the claim's row selection alone, for EXPLAIN in tests. */
    claimPick: `-- leasehold claim (selection only): the due rows a claim would lock, in claim order
SELECT id FROM ${s}.jobs
WHERE status IN ('queued','failed') AND run_at <= ${NOW}
  AND type = ANY($1::text[]) AND ($2::text[] IS NULL OR queue = ANY($2::text[]))
ORDER BY priority, run_at, id
LIMIT $3::int
FOR UPDATE SKIP LOCKED`,

    /**
     * $1 ids, $2 tokens, $3 lease ms. Returns the input positions (1-based) of the leases it
     * extended; the others are lost. `locked` takes the row locks in id order, so batches over
     * the same rows in different orders (heartbeats, finishes, rescues) wait for each other
     * instead of deadlocking. Built, like `finish`, so that no two CTEs are joined: its cached
     * (generic) plan cannot know the batch size, and stays right for 1 row or 500 (see
     * postgres-functions.ts).
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

    /**
     * $1 ids. A separate statement on purpose: its snapshot is taken after the heartbeat waited
     * out any concurrent finish, so a lease lost to a rescue reports the rescued status.
     */
    statuses: `-- leasehold heartbeat (lost leases): the current status of these jobs
SELECT id::text AS id, status FROM ${s}.jobs WHERE id = ANY($1::bigint[])`,

    /**
     * $1 ids, $2 tokens, $3 statuses, $4 run_after_ms (null: keep run_at), $5 uncount attempt,
     * $6 has error, $7 error codes, $8 error messages, $9 attempt outcomes, $10 attempt error
     * codes, $11 attempt error messages, $12 attempt error stacks, $13 attempt retry delays,
     * $14 only if expired, $15 notify channel, $16 notify payload. Returns the input positions
     * (1-based) of the items that landed. An optional array may be shorter than $1 (even
     * empty): unnest pads it with NULLs, read as "none" (and false for the booleans).
     * Row locks are taken in id order first (`locked`), as in `heartbeat`: no deadlocks. The
     * fence (token, running, expiry) is checked on the values `locked` read under the row lock
     * (the latest committed version); the update finds its rows by primary key, and every later
     * step reads what the step before returned: no two CTEs are joined, so the plan has no
     * join whose cost depends on the batch size the planner cannot see.
     */
    finish: `-- leasehold finish: land each fenced outcome (id + token + running, expired if asked), write its attempt row, notify if a job is due again
WITH locked AS (
  SELECT j.id, j.lease_token, j.status AS was, j.locked_until, j.locked_by, j.attempts, j.started_at, i.*
  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::float8[], $5::bool[], $6::bool[],
              $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
              $13::float8[], $14::bool[])
       WITH ORDINALITY AS i(item_id, token, status, run_after_ms, uncount, has_error, error_code,
                            error_message, att_outcome, att_error_code, att_error_message,
                            att_error_stack, att_retry_delay_ms, only_if_expired, ord)
  JOIN ${s}.jobs j ON j.id = i.item_id
  ORDER BY j.id FOR UPDATE OF j
), upd AS (
  UPDATE ${s}.jobs j
  SET status = l.status,
      run_at = CASE WHEN l.run_after_ms IS NULL THEN j.run_at ELSE ${NOW} + ${ms('l.run_after_ms')} END,
      attempts = CASE WHEN l.uncount THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
      last_error_code = CASE WHEN l.has_error THEN l.error_code ELSE j.last_error_code END,
      last_error = CASE WHEN l.has_error THEN l.error_message ELSE j.last_error END,
      locked_by = NULL, lease_token = NULL, locked_until = NULL,
      finished_at = CASE WHEN l.status IN ('succeeded','dead','cancelled') THEN ${NOW} END,
      updated_at = ${NOW}
  FROM locked l
  WHERE j.id = l.id AND l.lease_token = l.token AND l.was = 'running'
    AND (NOT coalesce(l.only_if_expired, false) OR l.locked_until < ${NOW})
  RETURNING l.ord, j.id, j.status, j.run_at, l.attempts, l.locked_by, l.lease_token, l.started_at,
            l.att_outcome, l.att_error_code, l.att_error_message, l.att_error_stack, l.att_retry_delay_ms
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
                                 outcome, error_code, error_message, error_stack, retry_delay_ms)
  SELECT id, attempts, locked_by, lease_token, started_at, ${NOW}, ${durationSince('started_at')},
         att_outcome, att_error_code, att_error_message, att_error_stack, round(att_retry_delay_ms)::bigint
  FROM upd
  ON CONFLICT (job_id, lease_token) DO UPDATE
  SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome,
      error_code = EXCLUDED.error_code, error_message = EXCLUDED.error_message,
      error_stack = EXCLUDED.error_stack, retry_delay_ms = EXCLUDED.retry_delay_ms
), woke AS (
  SELECT pg_notify($15, $16)
  FROM (SELECT 1 FROM upd WHERE upd.status IN ('queued','failed') AND upd.run_at <= ${NOW} LIMIT 1) AS due
)
SELECT ord FROM upd CROSS JOIN (SELECT count(*) FROM woke) AS notified`,

    /**
     * `finish` for a batch of plain successes, the commonest batch by far: $1 ids, $2 tokens.
     * The same fence, lock order and attempt rows as `finish` with status and outcome
     * 'succeeded' and nothing else set, without the twelve other per-item columns to send,
     * unnest and carry through the lock's sort, and without the wake-up (nothing becomes due).
     */
    finishSucceeded: `-- leasehold finish (successes): land each fenced success (id + token + running), write its attempt row
WITH locked AS (
  SELECT j.id, j.lease_token, j.status AS was, j.locked_by, j.attempts, j.started_at, i.token, i.ord
  FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS i(item_id, token, ord)
  JOIN ${s}.jobs j ON j.id = i.item_id
  ORDER BY j.id FOR UPDATE OF j
), upd AS (
  UPDATE ${s}.jobs j
  SET status = 'succeeded', locked_by = NULL, lease_token = NULL, locked_until = NULL,
      finished_at = ${NOW}, updated_at = ${NOW}
  FROM locked l
  WHERE j.id = l.id AND l.lease_token = l.token AND l.was = 'running'
  RETURNING l.ord, j.id, l.attempts, l.locked_by, l.lease_token, l.started_at
), closed AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome)
  SELECT id, attempts, locked_by, lease_token, started_at, ${NOW}, ${durationSince('started_at')}, 'succeeded'
  FROM upd
  ON CONFLICT (job_id, lease_token) DO UPDATE
  SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome,
      error_code = NULL, error_message = NULL, error_stack = NULL, retry_delay_ms = NULL
)
SELECT ord FROM upd`,

    /**
     * `finishSucceeded` without the lock step: the UPDATE takes each row's lock itself, visiting
     * the rows in id order (the sorted `items`, the outer side of the join), so heartbeats and
     * rescues, which lock in id order too, wait instead of deadlocking. `prior` is the row as the
     * statement's snapshot saw it, for the worker id the update clears: when the fence passes
     * (same token), the lease is the same and so is its worker. The status check is written so
     * that no partial index's predicate is implied by it: the planner must reach rows through
     * the primary key, not scan the running-lease index (its generic plan did, 200 µs per job).
     */
    finishSucceededUnlocked: `-- leasehold finish (successes): land each fenced success (id + token + running), write its attempt row
${successItemsAndSet(s)}  FROM items i, ${s}.jobs prior
  WHERE j.id = i.item_id AND prior.id = i.item_id AND j.lease_token = i.token AND (j.status = 'running') IS TRUE
  RETURNING i.ord, j.id, j.attempts, prior.locked_by, i.token AS lease_token, j.started_at
), fresh AS (
  -- a lease made from a claim's base ('base.id') never had a row opened for it: a plain insert
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome)
  SELECT id, attempts, locked_by, lease_token, started_at, ${NOW}, ${durationSince('started_at')}, 'succeeded'
  FROM upd WHERE strpos(lease_token, '.') > 0
), closed AS (
  -- an older claim's lease may have a row opened by a schema-2 claim: closed in place
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome)
  SELECT id, attempts, locked_by, lease_token, started_at, ${NOW}, ${durationSince('started_at')}, 'succeeded'
  FROM upd WHERE strpos(lease_token, '.') = 0
  ON CONFLICT (job_id, lease_token) DO UPDATE
  SET finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome,
      error_code = NULL, error_message = NULL, error_stack = NULL, retry_delay_ms = NULL
)
SELECT ord FROM upd`,

    /**
     * `finishSucceededUnlocked` for leases the caller knows were claimed by worker $3 with a
     * token base (postgres-finish.ts knows which, from its own claims): $1 ids, $2 tokens. The
     * attempt rows take the worker from $3 instead of a second read of each job row (`prior`),
     * which was about a tenth of the server's time per job in a drain (eleventh round). Exact:
     * a token is unique to its claim, so when the fence passes the lease is that claim's, and so
     * is its worker. Such a lease never had a row opened for it: a plain insert.
     */
    finishSucceededBy: `-- leasehold finish (successes of one worker's claims): land each fenced success (id + token + running), write its attempt row
${successItemsAndSet(s)}  FROM items i
  WHERE j.id = i.item_id AND j.lease_token = i.token AND (j.status = 'running') IS TRUE
  RETURNING i.ord, j.id, j.attempts, i.token AS lease_token, j.started_at
), fresh AS (
  INSERT INTO ${s}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome)
  SELECT id, attempts, $3::text, lease_token, started_at, ${NOW}, ${durationSince('started_at')}, 'succeeded'
  FROM upd
)
SELECT ord FROM upd`,

    /** `finishSucceededBy` through its function (migration 8); same parameters. */
    finishSucceededByCall: `-- leasehold finish (successes of one worker's claims): land each fenced success and write its attempt row; the positions that landed (the finish_succeeded function)
SELECT ord FROM ${s}.finish_succeeded($1::bigint[], $2::text[], $3::text)`,

    /** The success-only finish through its function; same parameters as `finishSucceeded`. */
    finishSucceededCall: `-- leasehold finish (successes): land each fenced success and write its attempt row; the positions that landed (the finish_succeeded function)
SELECT ord FROM ${s}.finish_succeeded($1::bigint[], $2::text[])`,

    /**
     * The claim through its function (postgres-functions.ts); the parameters of `claimWithBase`. Only
     * the CLAIM_COLUMNS travel back, in that order (read as arrays by toClaimedJob): the rest of
     * a claimed row is the claim's own doing (status, worker, the lease times all from one
     * `now`), and every column sent is parsed and allocated per job on the worker.
     */
    claimCall: `-- leasehold claim: lease up to $4 due jobs in claim order (the claim_jobs function)
SELECT ${CLAIM_COLUMNS.join(', ')} FROM ${s}.claim_jobs($1::text, $2::text[], $3::text[], $4::int, $5::float8, $6::text)`,

    /** The heartbeat through its function; same parameters as `heartbeat`. */
    heartbeatCall: `-- leasehold heartbeat: extend the leases still held; their positions (the heartbeat_jobs function)
SELECT ord FROM ${s}.heartbeat_jobs($1::bigint[], $2::text[], $3::float8)`,

    /** The finish through its function; same parameters as `finish`. */
    finishCall: `-- leasehold finish: land each fenced outcome and write its attempt row; the positions that landed (the finish_jobs function)
SELECT ord FROM ${s}.finish_jobs($1::bigint[], $2::text[], $3::text[], $4::float8[], $5::bool[],
  $6::bool[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::float8[], $14::bool[],
  $15::text, $16::text)`,

    /** $1 limit */
    findExpired: `-- leasehold sweep: running jobs whose lease has expired, of the types in $2 when not null, oldest lease first
SELECT id, type, lease_token, locked_by, attempts, max_attempts FROM ${s}.jobs
WHERE status = 'running' AND locked_until < ${NOW} AND ($2::text[] IS NULL OR type = ANY($2::text[]))
ORDER BY locked_until, id
LIMIT $1::int`,
  };
}
