/**
 * The SQLite schema's migrations: versioned, forward-only, the same numbers on every database.
 * `{p}` in the SQL is replaced by the table prefix (default `leasehold_`). Conventions: times are
 * INTEGER epoch milliseconds from the process clock; JSON is TEXT; a job id is never reused,
 * even after pruning, and "newest first" is "id descending".
 *
 * `migrate()` checks and applies inside ONE immediate transaction: a second process migrating at
 * the same time waits for the write lock, then finds everything applied. DDL is transactional in
 * SQLite, so a failing migration leaves nothing half-applied.
 */
import { SchemaTooNewError } from '../../core/errors.js';
import type { MigrateResult } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { withPrefix } from './sql.js';
import { WORKFLOW_JOB_COLUMNS, WORKFLOW_TABLES } from './workflows.js';
import { BATCH_MEMBERS_INDEX } from './workflow-reads.js';

/** One numbered step of the schema's history, applied once per database by `migrate()`. */
export interface Migration {
  /** its number; applied in order, recorded in the migrations table */
  readonly version: number;
  /** a short label, recorded with it */
  readonly name: string;
  /** its statements, `{p}` standing for the table prefix */
  readonly sql: string;
}

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'baseline',
    sql: `
-- jobs: one row per job; status moves per src/core/status.ts; the id is the rowid
CREATE TABLE {p}jobs (
  id              INTEGER PRIMARY KEY,
  queue           TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  -- equalities, not IN: SQLite builds an IN list of more than two values into a temporary
  -- index at every statement that changes the status (every claim and finish)
  status          TEXT    NOT NULL CHECK (status = 'queued' OR status = 'running' OR status = 'succeeded' OR status = 'failed'
                    OR status = 'dead' OR status = 'cancelled' OR status = 'waiting'),
  priority        INTEGER NOT NULL DEFAULT 0,
  run_at          INTEGER NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL,
  idempotency_key TEXT,
  locked_by       TEXT,
  lease_token     TEXT,
  locked_until    INTEGER,
  heartbeat_at    INTEGER,
  started_at      INTEGER,
  finished_at     INTEGER,
  last_error_code TEXT,
  last_error      TEXT,
  timeout_ms      INTEGER NOT NULL,
  max_runtime_ms  INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  schedule_name   TEXT,
  slot_at         INTEGER,
  trace_context   TEXT,
  concurrency_key TEXT,
  unique_key      TEXT${WORKFLOW_JOB_COLUMNS}
) STRICT;

-- claims walk due rows in claim order; the partial index holds only due statuses
CREATE INDEX {p}jobs_claim_idx ON {p}jobs (priority, run_at, id) WHERE status IN ('queued','failed');

-- the sweeper finds running rows whose lease expired
CREATE INDEX {p}jobs_running_idx ON {p}jobs (locked_until) WHERE status = 'running';

-- an operator's search and counts of failed, dead or cancelled jobs, newest first: rare rows
-- only, so no claim or finish into another status touches them
CREATE INDEX {p}jobs_failed_idx ON {p}jobs (id) WHERE status = 'failed';
CREATE INDEX {p}jobs_dead_idx ON {p}jobs (id) WHERE status = 'dead';
CREATE INDEX {p}jobs_cancelled_idx ON {p}jobs (id) WHERE status = 'cancelled';

-- at most one job per idempotency key
CREATE UNIQUE INDEX {p}jobs_idempotency_key_idx ON {p}jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- retention pruning by finish time
CREATE INDEX {p}jobs_finished_at_idx ON {p}jobs (finished_at) WHERE finished_at IS NOT NULL;

-- one job per (schedule, slot), whatever the number of schedulers
CREATE UNIQUE INDEX {p}jobs_schedule_slot_idx ON {p}jobs (schedule_name, slot_at) WHERE schedule_name IS NOT NULL;

-- one job per unique key among waiting and running jobs; a finished job frees its key
CREATE UNIQUE INDEX {p}jobs_unique_key_idx ON {p}jobs (unique_key)
  WHERE unique_key IS NOT NULL AND status IN ('queued','failed','running');
${WORKFLOW_TABLES}${BATCH_MEMBERS_INDEX}-- ids are never reused without AUTOINCREMENT, which rewrites its sqlite_sequence row on every
-- insert: a new id is above both the largest id in the table and this floor, the largest id
-- deleted. The effect ledger outlives pruned jobs and names them by id.
CREATE TABLE {p}job_id_floor (
  one   INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
  floor INTEGER NOT NULL
) STRICT;
-- the floor's one row: no job deleted yet
INSERT INTO {p}job_id_floor (one, floor) VALUES (1, 0);

-- whatever deletes a job (pruning, an operator's SQL) raises the floor past its id
CREATE TRIGGER {p}jobs_id_floor AFTER DELETE ON {p}jobs
  WHEN OLD.id > (SELECT floor FROM {p}job_id_floor)
  BEGIN UPDATE {p}job_id_floor SET floor = OLD.id; END;

-- job_attempts: one row per ended attempt, written once by the write that ends it (failure,
-- rescue, hand-back, cancel); while an attempt runs, its job row holds it, and a handler's
-- success stays in its job row for good (attempts.ts)
CREATE TABLE {p}job_attempts (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id         INTEGER NOT NULL REFERENCES {p}jobs (id) ON DELETE CASCADE,
  attempt        INTEGER NOT NULL,
  worker_id      TEXT    NOT NULL,
  lease_token    TEXT    NOT NULL,
  started_at     INTEGER NOT NULL,
  finished_at    INTEGER,
  duration_ms    INTEGER,
  outcome        TEXT    NOT NULL,
  error_code     TEXT,
  error_message  TEXT,
  error_stack    TEXT,
  retry_delay_ms INTEGER,
  wait_ms        INTEGER NOT NULL
) STRICT;

-- history of one job; one row per lease
CREATE UNIQUE INDEX {p}job_attempts_job_idx ON {p}job_attempts (job_id, lease_token);

-- attempts.outcomes reads the attempts that ended in a recent window, not the whole history
CREATE INDEX {p}job_attempts_finished_idx ON {p}job_attempts (finished_at);

-- effects: the ledger behind ctx.once; deliberately not tied to jobs, so pruning keeps it
CREATE TABLE {p}effects (
  key         TEXT    NOT NULL PRIMARY KEY,
  job_id      INTEGER NOT NULL,
  lease_token TEXT,
  state       TEXT    NOT NULL CHECK (state IN ('pending','done')),
  result      TEXT,
  created_at  INTEGER NOT NULL,
  done_at     INTEGER
) STRICT;

-- effects of one job
CREATE INDEX {p}effects_job_idx ON {p}effects (job_id);

-- workers: who is alive, for the dashboard and faster rescue
CREATE TABLE {p}workers (
  id           TEXT    NOT NULL PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  version      TEXT    NOT NULL,
  queues       TEXT,
  types        TEXT    NOT NULL,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
) STRICT;

-- schedules: recurring jobs; next_run_at is advanced by compare-and-set
CREATE TABLE {p}schedules (
  name              TEXT    NOT NULL PRIMARY KEY,
  cron              TEXT,
  every_ms          INTEGER,
  timezone          TEXT    NOT NULL,
  type              TEXT    NOT NULL,
  payload           TEXT    NOT NULL,
  queue             TEXT    NOT NULL,
  priority          INTEGER NOT NULL,
  max_attempts      INTEGER NOT NULL,
  misfire           TEXT    NOT NULL CHECK (misfire IN ('skip','latest','all')),
  misfire_window_ms INTEGER,
  misfire_max       INTEGER NOT NULL,
  enabled           INTEGER NOT NULL,
  source            TEXT    NOT NULL CHECK (source IN ('code','cli')),
  next_run_at       INTEGER,
  last_run_at       INTEGER,
  last_slot_at      INTEGER,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL
) STRICT;

-- the scheduler's lookup of due schedules
CREATE INDEX {p}schedules_due_idx ON {p}schedules (next_run_at) WHERE enabled = 1;

-- locks: slot -1 of a name is its fence counter and keeps the slot count last granted (NULL:
-- none yet); slots 0..n-1 are the holdings
CREATE TABLE {p}locks (
  name        TEXT    NOT NULL,
  slot        INTEGER NOT NULL,
  owner       TEXT,
  token       TEXT,
  fence       INTEGER NOT NULL,
  acquired_at INTEGER,
  expires_at  INTEGER,
  slots       INTEGER,
  PRIMARY KEY (name, slot)
) STRICT;

-- alert_states: one row per alert rule; episode moves by compare-and-set, one notification each
CREATE TABLE {p}alert_states (
  rule       TEXT    NOT NULL PRIMARY KEY,
  state      TEXT    NOT NULL CHECK (state IN ('ok','firing')),
  episode    INTEGER NOT NULL,
  since      INTEGER NOT NULL,
  value      REAL,
  updated_at INTEGER NOT NULL
) STRICT;

-- queue_states: one row per queue ever paused or resumed; claims leave out the paused ones
CREATE TABLE {p}queue_states (
  queue      TEXT    NOT NULL PRIMARY KEY,
  paused     INTEGER NOT NULL,
  paused_at  INTEGER,
  updated_at INTEGER NOT NULL
) STRICT;

-- flow_buckets: the token buckets of rate-limited types, by core/flow.ts bucketName
CREATE TABLE {p}flow_buckets (
  name        TEXT    NOT NULL PRIMARY KEY,
  tokens      REAL    NOT NULL,
  refilled_at INTEGER NOT NULL
) STRICT;

-- job_events: an operator's changes to a job (retried, cancelled), written in the change's
-- transaction; found by job (its history, pruning), so no foreign key to check per write
CREATE TABLE {p}job_events (
  id     INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL,
  at     INTEGER NOT NULL,
  kind   TEXT    NOT NULL CHECK (kind IN ('retried','cancelled')),
  actor  TEXT    NOT NULL,
  source TEXT,
  detail TEXT    NOT NULL
) STRICT;

-- a job's events, listed and pruned with it
CREATE INDEX {p}job_events_job_idx ON {p}job_events (job_id);

-- attempt_rollups: ended attempts of a closed 15-minute slot counted once (core/chart-rollups.ts)
-- by outcome, failures by type, run-time and wait bins, and a 'slot' row saying it was counted;
-- the charts read these instead of every attempt of a week
CREATE TABLE {p}attempt_rollups (
  slot_at INTEGER NOT NULL,
  kind    TEXT    NOT NULL,
  label   TEXT    NOT NULL,
  n       INTEGER NOT NULL,
  PRIMARY KEY (slot_at, kind, label)
) STRICT, WITHOUT ROWID;
`,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

const LEDGER_SQL = {
  create: `-- leasehold migrations.create: create the migrations ledger if this database has none yet
    CREATE TABLE IF NOT EXISTS {p}migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
  exists: `-- leasehold migrations.exists: does the ledger table exist? (schemaVersion on an empty file must not create it)
    SELECT 1 AS ok FROM sqlite_master WHERE type = 'table' AND name = '{p}migrations'`,
  maxVersion: `-- leasehold migrations.maxVersion: highest applied migration version, 0 when none
    SELECT coalesce(max(version), 0) AS v FROM {p}migrations`,
  record: `-- leasehold migrations.record: record one applied migration
    INSERT INTO {p}migrations (version, name, applied_at) VALUES (@version, @name, @now)`,
} as const;

/** Highest applied migration (0: none, not even the ledger). */
export function schemaVersion(db: SqliteDb): number {
  return db.read(() => {
    if (db.stmt(LEDGER_SQL.exists).get() === undefined) return 0;
    return (db.stmt(LEDGER_SQL.maxVersion).get() as { v: number }).v;
  });
}

/** Apply the pending migrations in one IMMEDIATE transaction; see the header. */
export function migrate(db: SqliteDb): MigrateResult {
  return db.write(() => {
    db.conn.exec(withPrefix(LEDGER_SQL.create, db.prefix));
    const from = (db.stmt(LEDGER_SQL.maxVersion).get() as { v: number }).v;
    if (from > SCHEMA_VERSION) throw new SchemaTooNewError(from, SCHEMA_VERSION);
    const applied: MigrateResult['applied'] = [];
    const now = db.now();
    for (const m of MIGRATIONS.filter((x) => x.version > from)) {
      db.conn.exec(withPrefix(m.sql, db.prefix));
      db.stmt(LEDGER_SQL.record).run({ version: m.version, name: m.name, now });
      applied.push({ version: m.version, name: m.name });
    }
    return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
  });
}
