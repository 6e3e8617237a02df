/**
 * SQLite schema migrations: versioned, forward-only, the same version numbers in every dialect.
 * `{p}` in the SQL is replaced by the table prefix (default `leasehold_`).
 *
 * Conventions: times are INTEGER epoch milliseconds taken from the process clock (SQLite is
 * in-process, so the "database clock" of the contract is the clock of the process that writes);
 * JSON is stored as TEXT; an id is never reused, even after pruning (AUTOINCREMENT until schema 3,
 * then the floor of migration 6), and "newest first" is "id descending".
 *
 * Never edit a migration that has shipped: add a new one with the next version.
 */
export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /**
   * The migration rebuilds a table others reference: it runs with foreign keys off (with them
   * on, dropping the old table would first delete its rows and cascade to their children), and
   * the keys are checked before it commits.
   */
  readonly rebuildsTables?: true;
}

/** jobs' columns in table order (schema 2 on), for a rebuild's copy. */
const JOB_COLUMNS = `id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key, locked_by,
  lease_token, locked_until, heartbeat_at, started_at, finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms,
  created_at, updated_at, schedule_name, slot_at`;

export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'initial schema: jobs, job_attempts, effects, workers',
    sql: `
-- jobs: one row per job; status moves per src/core/status.ts
CREATE TABLE {p}jobs (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  queue           TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  status          TEXT    NOT NULL CHECK (status IN ('queued','running','succeeded','failed','dead','cancelled')),
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
  updated_at      INTEGER NOT NULL
) STRICT;

-- claims walk due rows in claim order; the partial index holds only due statuses
CREATE INDEX {p}jobs_claim_idx ON {p}jobs (priority, run_at, id) WHERE status IN ('queued','failed');

-- the sweeper finds running rows whose lease expired
CREATE INDEX {p}jobs_running_idx ON {p}jobs (locked_until) WHERE status = 'running';

-- at most one job per idempotency key
CREATE UNIQUE INDEX {p}jobs_idempotency_key_idx ON {p}jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- retention pruning by finish time
CREATE INDEX {p}jobs_finished_at_idx ON {p}jobs (finished_at) WHERE finished_at IS NOT NULL;

-- job_attempts: one row per attempt, never overwritten once closed
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
  retry_delay_ms INTEGER
) STRICT;

-- history of one job; closing an attempt looks it up by (job_id, lease_token)
CREATE INDEX {p}job_attempts_job_idx ON {p}job_attempts (job_id, lease_token);

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
`,
  },
  {
    version: 2,
    name: 'schedules, locks, job slots',
    sql: `
-- jobs a schedule enqueued carry the schedule's name and the slot (fire time) they stand for
ALTER TABLE {p}jobs ADD COLUMN schedule_name TEXT;
-- the slot time, epoch ms
ALTER TABLE {p}jobs ADD COLUMN slot_at INTEGER;

-- one job per (schedule, slot), whatever the number of schedulers
CREATE UNIQUE INDEX {p}jobs_schedule_slot_idx ON {p}jobs (schedule_name, slot_at) WHERE schedule_name IS NOT NULL;

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

-- locks: slot -1 of a name is its fence counter; slots 0..n-1 are the holdings
CREATE TABLE {p}locks (
  name        TEXT    NOT NULL,
  slot        INTEGER NOT NULL,
  owner       TEXT,
  token       TEXT,
  fence       INTEGER NOT NULL,
  acquired_at INTEGER,
  expires_at  INTEGER,
  PRIMARY KEY (name, slot)
) STRICT;
`,
  },
  {
    version: 3,
    name: 'attempt rows written when the attempt ends',
    sql: `
-- an attempt's history row is now inserted once, by the write that ends the attempt (finish,
-- rescue, hand-back, cancel); while it runs, the job row holds it. The finish's INSERT … ON
-- CONFLICT (job_id, lease_token) DO UPDATE needs that pair unique, to close in place a row a
-- schema-2 claim opened. Same index name and columns, so it still serves listing and pruning.
-- The foreign key to jobs stays: SQLite drops one only by rebuilding the table, and its check
-- is one rowid lookup per insert.
DROP INDEX {p}job_attempts_job_idx;
CREATE UNIQUE INDEX {p}job_attempts_job_idx ON {p}job_attempts (job_id, lease_token);
`,
  },
  {
    // 6: the numbers mean the same change in every dialect, and PostgreSQL has 4 and 5
    version: 6,
    name: 'job ids from a floor instead of AUTOINCREMENT',
    rebuildsTables: true,
    sql: `
-- AUTOINCREMENT rewrote its sqlite_sequence row on every insert: a third page per one-job
-- commit. Ids stay never reused another way: a new id is above both the largest id in the table
-- and the floor, and the floor is raised to any id deleted above it (the trigger below), so it
-- is at least every id ever handed out that is no longer in the table. It starts at the
-- sequence AUTOINCREMENT kept. The effect ledger outlives pruned jobs and names them by id.
CREATE TABLE {p}job_id_floor (
  one   INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
  floor INTEGER NOT NULL
) STRICT;
INSERT INTO {p}job_id_floor (one, floor)
  VALUES (1, coalesce((SELECT seq FROM sqlite_sequence WHERE name = '{p}jobs'), 0));

-- jobs, the same columns, the id a plain INTEGER PRIMARY KEY (the rowid)
CREATE TABLE {p}jobs_v6 (
  id              INTEGER PRIMARY KEY,
  queue           TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  status          TEXT    NOT NULL CHECK (status IN ('queued','running','succeeded','failed','dead','cancelled')),
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
  slot_at         INTEGER
) STRICT;
INSERT INTO {p}jobs_v6 (${JOB_COLUMNS}) SELECT ${JOB_COLUMNS} FROM {p}jobs;
DROP TABLE {p}jobs;
ALTER TABLE {p}jobs_v6 RENAME TO {p}jobs;

-- the indexes of schemas 1 and 2, unchanged
CREATE INDEX {p}jobs_claim_idx ON {p}jobs (priority, run_at, id) WHERE status IN ('queued','failed');
CREATE INDEX {p}jobs_running_idx ON {p}jobs (locked_until) WHERE status = 'running';
CREATE UNIQUE INDEX {p}jobs_idempotency_key_idx ON {p}jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX {p}jobs_finished_at_idx ON {p}jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE UNIQUE INDEX {p}jobs_schedule_slot_idx ON {p}jobs (schedule_name, slot_at) WHERE schedule_name IS NOT NULL;

-- whatever deletes a job (pruning, an operator's SQL) raises the floor past its id
CREATE TRIGGER {p}jobs_id_floor AFTER DELETE ON {p}jobs
  WHEN OLD.id > (SELECT floor FROM {p}job_id_floor)
  BEGIN UPDATE {p}job_id_floor SET floor = OLD.id; END;

-- code from before schema 6 (a worker still running through the upgrade, an app that only
-- enqueues) lets SQLite pick max(id) + 1, which can be a pruned job's id: it fails instead
CREATE TRIGGER {p}jobs_id_above_floor AFTER INSERT ON {p}jobs
  WHEN NEW.id <= (SELECT floor FROM {p}job_id_floor)
  BEGIN SELECT RAISE(ABORT, 'leasehold: this job id was used by a deleted job; the process inserting it runs a leasehold older than schema 6'); END;
`,
  },
  {
    version: 9,
    name: 'semaphores keep their slot count',
    sql: `
-- the counter row (slot -1) of a lock keeps the slot count it was last granted with: a caller
-- asking for another count while the semaphore is held is refused (NULL: none recorded yet)
ALTER TABLE {p}locks ADD COLUMN slots INTEGER;
`,
  },
];

/** The highest version this code knows. */
export const SQLITE_LATEST_VERSION: number = SQLITE_MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);

/** Allowed table prefixes: an identifier, so it can be spliced into SQL safely. */
const PREFIX_RE = /^[A-Za-z_][A-Za-z0-9_]{0,40}$/;

export function checkPrefix(prefix: string): string {
  if (prefix !== '' && !PREFIX_RE.test(prefix)) {
    throw new TypeError(`invalid tablePrefix ${JSON.stringify(prefix)}: letters, digits and _ only`);
  }
  return prefix;
}

/** Replace `{p}` with the table prefix. */
export function withPrefix(sql: string, prefix: string): string {
  return sql.replaceAll('{p}', prefix);
}
