/**
 * Versioned, forward-only migrations, the same numbers on every database. Each `sql` takes the quoted
 * schema name, so several installations can share one database. `migrate()` runs the pending ones in
 * one transaction under an advisory lock: two processes migrating at once apply each version once.
 */
import { LeaseholdError, SchemaTooNewError } from '../../core/errors.js';
import type { MigrateResult } from '../../core/storage.js';
import type { Db } from './db.js';
import { CLAIM_COLUMNS, leasesSql } from './leases.js';
import { WORKFLOW_JOB_COLUMNS, workflowTables } from './workflows.js';
import { batchMembersIndex } from './workflow-reads.js';

/** The SQL types of the claim's columns, for the function's result. */
const CLAIM_TYPES: Record<(typeof CLAIM_COLUMNS)[number], string> = {
  id: 'bigint', queue: 'text', type: 'text', payload: 'json', priority: 'integer', run_at: 'timestamptz', attempts: 'integer', max_attempts: 'integer',
  idempotency_key: 'text', locked_until: 'timestamptz', started_at: 'timestamptz', finished_at: 'timestamptz', last_error_code: 'text', last_error: 'text',
  timeout_ms: 'bigint', max_runtime_ms: 'bigint', created_at: 'timestamptz', schedule_name: 'text', slot_at: 'timestamptz', trace_context: 'text', concurrency_key: 'text', unique_key: 'text',
};

/** One numbered step of the schema's history, applied once per database by `migrate()`. */
export interface Migration {
  /** its number; applied in order, recorded in the migrations table */
  version: number;
  /** a short label, recorded with it */
  name: string;
  /** `s` is the already-quoted schema name, e.g. `"leasehold"` */
  sql: (s: string) => string;
}

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'baseline',
    sql: (s) => `
-- jobs: one row per job; a running attempt lives in its row until it ends
CREATE TABLE ${s}.jobs (
  id               bigserial PRIMARY KEY,
  queue            text        NOT NULL,
  type             text        NOT NULL,
  payload          json        NOT NULL DEFAULT 'null'::json,
  status           text        NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued','running','succeeded','failed','dead','cancelled','waiting')),
  priority         integer     NOT NULL DEFAULT 0,
  run_at           timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  attempts         integer     NOT NULL DEFAULT 0,
  max_attempts     integer     NOT NULL,
  idempotency_key  text,
  locked_by        text,
  lease_token      text,
  locked_until     timestamptz(3),
  heartbeat_at     timestamptz(3),
  started_at       timestamptz(3),
  finished_at      timestamptz(3),
  last_error_code  text,
  last_error       text,
  timeout_ms       bigint      NOT NULL,
  max_runtime_ms   bigint      NOT NULL,
  created_at       timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at       timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  schedule_name    text,
  slot_at          timestamptz(3),
  trace_context    text,
  concurrency_key  text,
  unique_key       text${WORKFLOW_JOB_COLUMNS}
);
-- claim order over due rows only, so finished rows never enter the claim's index scan
CREATE INDEX jobs_due_idx ON ${s}.jobs (priority, run_at, id) WHERE status IN ('queued','failed');
-- the sweeper's lookup of expired leases, over running rows only
CREATE INDEX jobs_running_lease_idx ON ${s}.jobs (locked_until, id) WHERE status = 'running';
-- an operator's search and counts of failed, dead or cancelled jobs, newest first: rare rows
-- only, so no claim or finish into another status writes to them
CREATE INDEX jobs_failed_idx ON ${s}.jobs (id) WHERE status = 'failed';
CREATE INDEX jobs_dead_idx ON ${s}.jobs (id) WHERE status = 'dead';
CREATE INDEX jobs_cancelled_idx ON ${s}.jobs (id) WHERE status = 'cancelled';
-- at most one job per idempotency key
CREATE UNIQUE INDEX jobs_idempotency_key_idx ON ${s}.jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- retention pruning of finished rows
CREATE INDEX jobs_finished_at_idx ON ${s}.jobs (finished_at) WHERE finished_at IS NOT NULL;
-- one job per (schedule, slot), whatever the number of schedulers
CREATE UNIQUE INDEX jobs_schedule_slot_idx ON ${s}.jobs (schedule_name, slot_at) WHERE schedule_name IS NOT NULL;
-- one job per unique key among the jobs that hold it (queued, failed, running): a finish frees the key
CREATE UNIQUE INDEX jobs_unique_key_idx ON ${s}.jobs (unique_key) WHERE unique_key IS NOT NULL AND status IN ('queued','failed','running');
${workflowTables(s)}${batchMembersIndex(s)}-- job_attempts: one row per ended attempt, written by the write that ends it; found by its job
-- (listing, pruning), so no foreign key to check and no second index to keep per insert
CREATE TABLE ${s}.job_attempts (
  id              bigserial   NOT NULL,
  job_id          bigint      NOT NULL,
  attempt         integer     NOT NULL,
  worker_id       text        NOT NULL,
  lease_token     text        NOT NULL,
  started_at      timestamptz(3) NOT NULL,
  finished_at     timestamptz(3),
  duration_ms     bigint,
  outcome         text        NOT NULL,
  error_code      text,
  error_message   text,
  error_stack     text,
  retry_delay_ms  bigint,
  wait_ms         bigint      NOT NULL,
  PRIMARY KEY (job_id, lease_token)
);
-- attempts.outcomes reads the attempts that ended in a recent window, not the whole history
CREATE INDEX job_attempts_finished_at_idx ON ${s}.job_attempts (finished_at);

-- effects: the ctx.once ledger; never pruned with jobs, so no foreign key to them
CREATE TABLE ${s}.effects (
  key          text PRIMARY KEY,
  job_id       bigint      NOT NULL,
  lease_token  text        NOT NULL,
  state        text        NOT NULL CHECK (state IN ('pending','done')),
  result       json,
  created_at   timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  done_at      timestamptz(3)
);
-- listing a job's effects
CREATE INDEX effects_job_id_idx ON ${s}.effects (job_id);

-- workers: who is alive, for the dashboard and faster rescue
CREATE TABLE ${s}.workers (
  id            text PRIMARY KEY,
  host          text        NOT NULL,
  pid           integer     NOT NULL,
  version       text        NOT NULL,
  queues        jsonb,
  types         jsonb       NOT NULL,
  started_at    timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  heartbeat_at  timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now())
);

-- schedules: recurring jobs; next_run_at is advanced by compare-and-set
CREATE TABLE ${s}.schedules (
  name               text PRIMARY KEY,
  cron               text,
  every_ms           bigint,
  timezone           text        NOT NULL,
  type               text        NOT NULL,
  payload            json        NOT NULL,
  queue              text        NOT NULL,
  priority           integer     NOT NULL,
  max_attempts       integer     NOT NULL,
  misfire            text        NOT NULL CHECK (misfire IN ('skip','latest','all')),
  misfire_window_ms  bigint,
  misfire_max        integer     NOT NULL,
  enabled            boolean     NOT NULL,
  source             text        NOT NULL CHECK (source IN ('code','cli')),
  next_run_at        timestamptz(3),
  last_run_at        timestamptz(3),
  last_slot_at       timestamptz(3),
  created_at         timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at         timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now())
);
-- the scheduler's lookup of due schedules
CREATE INDEX schedules_due_idx ON ${s}.schedules (next_run_at) WHERE enabled;

-- locks: slot -1 of a name is its fence counter and keeps the slot count it was last granted
-- with (null: none yet); slots 0..n-1 are the holdings
CREATE TABLE ${s}.locks (
  name         text    NOT NULL,
  slot         integer NOT NULL,
  owner        text,
  token        text,
  fence        bigint  NOT NULL,
  acquired_at  timestamptz(3),
  expires_at   timestamptz(3),
  slots        integer,
  PRIMARY KEY (name, slot)
);

-- alert_states: one row per alert rule; episode moves by compare-and-set, one notification each
CREATE TABLE ${s}.alert_states (
  rule        text PRIMARY KEY,
  state       text    NOT NULL CHECK (state IN ('ok','firing')),
  episode     integer NOT NULL,
  since       timestamptz(3) NOT NULL,
  value       double precision,
  updated_at  timestamptz(3) NOT NULL
);

-- queue_states: queues paused or resumed by an operator; the claim leaves a paused queue's jobs
CREATE TABLE ${s}.queue_states (
  queue      text PRIMARY KEY,
  paused     boolean     NOT NULL,
  paused_at  timestamptz(3),
  updated_at timestamptz(3) NOT NULL
);

-- flow_buckets: a limited type's row (named by the type) serialises its claims; rate-limit token
-- buckets are rows named by core/flow.ts bucketName; null tokens: no bucket stored yet (full)
CREATE TABLE ${s}.flow_buckets (
  name         text PRIMARY KEY,
  tokens       double precision,
  refilled_at  timestamptz(3)
);

-- job_events: an operator's changes to a job (retried, cancelled), written by the change's own
-- statement; found by job (its history, pruning) through the primary key, one index per insert
CREATE TABLE ${s}.job_events (
  id      bigserial   NOT NULL,
  job_id  bigint      NOT NULL,
  at      timestamptz(3) NOT NULL,
  kind    text        NOT NULL CHECK (kind IN ('retried','cancelled')),
  actor   text        NOT NULL,
  source  text,
  detail  json        NOT NULL,
  PRIMARY KEY (job_id, id)
);

-- attempt_rollups: ended attempts of a closed 15-minute slot counted once (core/chart-rollups.ts)
-- by outcome, failures by type, run-time and wait bins, and a 'slot' row saying it was counted;
-- the charts read these instead of every attempt of a week
CREATE TABLE ${s}.attempt_rollups (
  slot_at  timestamptz(3) NOT NULL,
  kind     text        NOT NULL,
  label    text        NOT NULL,
  n        bigint      NOT NULL,
  PRIMARY KEY (slot_at, kind, label)
);

-- claim_jobs: the claim (leases.ts), planned with index scans only: without planner statistics
-- (a fresh or bulk-loaded table autovacuum has not analyzed yet) a plain statement sorts every
-- due row per claim instead of reading jobs_due_idx in order and stopping after lim rows; never
-- JIT-compiled: on millions of jobs its cost passes jit_above_cost, and compiling costs more than the claim
CREATE FUNCTION ${s}.claim_jobs(worker text, types text[], queues text[], lim integer, lease_ms float8, token_base text)
RETURNS TABLE (${CLAIM_COLUMNS.map((c) => `${c} ${CLAIM_TYPES[c]}`).join(', ')})
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
${leasesSql(s).claim};
END
$fn$;
`,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** Apply pending migrations in one transaction, serialised with other migrators of this schema. */
export function migrate(db: Db): Promise<MigrateResult> {
  const sql = ledgerSql(db.q);
  return db.transaction('migrate', async (c) => {
    const server = Number((await c.query(sql.serverVersion)).rows[0]?.v ?? 0);
    if (server < 130000) throw new LeaseholdError('UNSUPPORTED_SERVER', `PostgreSQL ${server} is too old: leasehold needs 13 or newer (gen_random_uuid)`);
    await c.query(sql.lock, [`leasehold.migrate.${db.schema}`]);
    await c.query(sql.createSchema);
    await c.query(sql.createLedger);
    const from = Number((await c.query(sql.maxVersion)).rows[0]?.version ?? 0);
    if (from > SCHEMA_VERSION) throw new SchemaTooNewError(from, SCHEMA_VERSION);
    const applied: MigrateResult['applied'] = [];
    for (const m of MIGRATIONS.filter((x) => x.version > from)) {
      await c.query(m.sql(db.q));
      await c.query(sql.record, [m.version, m.name]);
      applied.push({ version: m.version, name: m.name });
    }
    return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
  });
}

/** Highest applied migration (0: none, not even the ledger). */
export async function schemaVersion(db: Db): Promise<number> {
  const sql = ledgerSql(db.q);
  const [row] = await db.run('schemaVersion', sql.ledgerExists, [`${db.q}.migrations`]);
  if (!row?.present) return 0;
  const [v] = await db.run('schemaVersion', sql.maxVersion);
  return Number(v?.version ?? 0);
}

/** The migrations ledger and the statements `migrate()` runs around the migrations. */
function ledgerSql(s: string) {
  return {
    /** $1 lock name */
    lock: `-- leasehold migrate: serialise migrators of this schema until the transaction ends
SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`,

    serverVersion: `-- leasehold migrate: the server's version number (e.g. 150004), to refuse servers older than 13
SELECT current_setting('server_version_num')::int AS v`,

    createSchema: `-- leasehold migrate: create the schema if it is missing
CREATE SCHEMA IF NOT EXISTS ${s}`,

    createLedger: `-- leasehold migrate: create the migrations ledger if it is missing
CREATE TABLE IF NOT EXISTS ${s}.migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,

    /** $1 the ledger's qualified name */
    ledgerExists: `-- leasehold schemaVersion: whether the migrations ledger exists yet
SELECT to_regclass($1::text) IS NOT NULL AS present`,

    maxVersion: `-- leasehold migrate: highest applied migration in the ledger
SELECT coalesce(max(version), 0)::int AS version FROM ${s}.migrations`,

    /** $1 version, $2 name */
    record: `-- leasehold migrate: record an applied migration in the ledger
INSERT INTO ${s}.migrations (version, name) VALUES ($1::int, $2::text)`,
  };
}
