/**
 * Schema migrations for MySQL 8.0.4+ / MariaDB 10.6+, forward only, with the same numbers on
 * every database; the server version check is in ./server-version.ts.
 *
 * DDL commits on its own in MySQL, so a migration cannot be rolled back half way: every step is
 * idempotent (`CREATE TABLE IF NOT EXISTS`, indexes declared inside it) and the ledger row is
 * written last. Two processes migrating at once take turns on a named lock (GET_LOCK); the
 * second finds nothing left to do.
 *
 * In the DDL, `{p}` is the table prefix and `{collate}` the server's binary, no-pad collation
 * (exact, case- and trailing-space-sensitive matching of types, queues and keys).
 */
import { SchemaTooNewError, TransientStorageError } from '../../core/errors.js';
import type { MigrateResult } from '../../core/storage.js';
import { type Db, type Queryable, exec, run, withRetry } from './db.js';
import { checkServerVersion } from './server-version.js';
import { NOW } from './sql.js';
import { WORKFLOW_JOB_COLUMNS, WORKFLOW_TABLES } from './workflows.js';
import { BATCH_MEMBERS_KEY } from './workflow-reads.js';

/** One numbered step of the schema's history, applied once per database by `migrate()`. */
export interface Migration {
  /** its number; applied in order, recorded in the migrations table */
  version: number;
  /** a short label, recorded with it */
  name: string;
  /** its statements, run one by one (MySQL commits each DDL statement by itself) */
  sql: readonly string[];
}

const TABLE_OPTS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collate}';

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'baseline',
    sql: [
      // jobs: one row per job; the claim, sweeper and prune paths each have an index; a schedule's
      // jobs carry its name and slot, one job per (schedule, slot)
      `CREATE TABLE IF NOT EXISTS {p}jobs (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        queue VARCHAR(128) NOT NULL,
        type VARCHAR(128) NOT NULL,
        payload LONGTEXT NOT NULL,
        status VARCHAR(16) NOT NULL,
        priority INT NOT NULL DEFAULT 0,
        run_at DATETIME(6) NOT NULL,
        attempts INT NOT NULL DEFAULT 0,
        max_attempts INT NOT NULL,
        idempotency_key VARCHAR(255) NULL,
        locked_by VARCHAR(255) NULL,
        lease_token VARCHAR(64) NULL,
        locked_until DATETIME(6) NULL,
        heartbeat_at DATETIME(6) NULL,
        started_at DATETIME(6) NULL,
        finished_at DATETIME(6) NULL,
        last_error_code VARCHAR(255) NULL,
        last_error TEXT NULL,
        timeout_ms BIGINT NOT NULL,
        max_runtime_ms BIGINT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NOT NULL,
        schedule_name VARCHAR(128) NULL,
        slot_at DATETIME(6) NULL,
        trace_context TEXT NULL,
        concurrency_key VARCHAR(255) NULL,
        unique_key VARCHAR(255) NULL,${WORKFLOW_JOB_COLUMNS}
        -- no partial indexes here: the key while its job is queued, failed or running, else NULL
        -- (NULLs never collide), carries the unique key's UNIQUE index
        unique_live VARCHAR(255) AS (IF(status IN ('queued', 'failed', 'running'), unique_key, NULL)) STORED,
        PRIMARY KEY (id),
        UNIQUE KEY {p}jobs_idempotency_key (idempotency_key),
        UNIQUE KEY {p}jobs_schedule_slot (schedule_name, slot_at),
        UNIQUE KEY {p}jobs_unique_live (unique_live),
        -- claim order, then type and queue: a claim rejects a type or queue it does not serve in the
        -- index, and the dashboard's counts and searches by status and type read no row
        KEY {p}jobs_claim (status, priority, run_at, id, type, queue),
        KEY {p}jobs_sweep (status, locked_until),
        -- finished_at alone: a claim, and a finish that makes the job due again, leave it NULL
        -- and so do not move the row in this index (status is filtered on the row)
        KEY {p}jobs_prune (finished_at)${BATCH_MEMBERS_KEY}
      ) ${TABLE_OPTS}`,
      // job_attempts: one history row per attempt, written when the attempt ends; one per lease
      `CREATE TABLE IF NOT EXISTS {p}job_attempts (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        job_id BIGINT UNSIGNED NOT NULL,
        attempt INT NOT NULL,
        worker_id VARCHAR(255) NOT NULL,
        lease_token VARCHAR(64) NOT NULL,
        started_at DATETIME(6) NOT NULL,
        finished_at DATETIME(6) NULL,
        duration_ms BIGINT NULL,
        outcome VARCHAR(16) NOT NULL,
        error_code VARCHAR(255) NULL,
        error_message TEXT NULL,
        error_stack TEXT NULL,
        retry_delay_ms BIGINT NULL,
        wait_ms BIGINT NOT NULL,
        PRIMARY KEY (id),
        UNIQUE KEY {p}job_attempts_lease (job_id, lease_token),
        -- attempts.outcomes reads the attempts that ended in a recent window, not the whole history
        KEY {p}job_attempts_finished (finished_at)
      ) ${TABLE_OPTS}`,
      // effects: the ctx.once ledger, never pruned with the jobs; `key` is a reserved word in
      // MySQL, and the auto-increment id keeps new rows appended in insertion order
      `CREATE TABLE IF NOT EXISTS {p}effects (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        effect_key VARCHAR(512) NOT NULL,
        job_id BIGINT UNSIGNED NOT NULL,
        lease_token VARCHAR(64) NULL,
        state VARCHAR(16) NOT NULL,
        result LONGTEXT NULL,
        created_at DATETIME(6) NOT NULL,
        done_at DATETIME(6) NULL,
        PRIMARY KEY (id),
        UNIQUE KEY {p}effects_key (effect_key),
        KEY {p}effects_job (job_id)
      ) ${TABLE_OPTS}`,
      // workers: who is alive, for the dashboard and faster rescue
      `CREATE TABLE IF NOT EXISTS {p}workers (
        id VARCHAR(255) NOT NULL,
        host VARCHAR(255) NOT NULL,
        pid INT NOT NULL,
        version VARCHAR(64) NOT NULL,
        queues LONGTEXT NULL,
        types LONGTEXT NOT NULL,
        started_at DATETIME(6) NOT NULL,
        heartbeat_at DATETIME(6) NOT NULL,
        PRIMARY KEY (id),
        KEY {p}workers_heartbeat (heartbeat_at)
      ) ${TABLE_OPTS}`,
      // schedules: recurring jobs; next_run_at is advanced by compare-and-set
      `CREATE TABLE IF NOT EXISTS {p}schedules (
        name VARCHAR(128) NOT NULL,
        cron VARCHAR(255) NULL,
        every_ms BIGINT NULL,
        timezone VARCHAR(64) NOT NULL,
        type VARCHAR(128) NOT NULL,
        payload LONGTEXT NOT NULL,
        queue VARCHAR(128) NOT NULL,
        priority INT NOT NULL,
        max_attempts INT NOT NULL,
        misfire VARCHAR(16) NOT NULL,
        misfire_window_ms BIGINT NULL,
        misfire_max INT NOT NULL,
        enabled TINYINT(1) NOT NULL,
        source VARCHAR(8) NOT NULL,
        next_run_at DATETIME(6) NULL,
        last_run_at DATETIME(6) NULL,
        last_slot_at DATETIME(6) NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NOT NULL,
        PRIMARY KEY (name),
        KEY {p}schedules_due (enabled, next_run_at)
      ) ${TABLE_OPTS}`,
      // locks: slot -1 of a name is its fence counter and keeps the slot count last granted
      // (NULL: none yet); slots 0..n-1 are the holdings
      `CREATE TABLE IF NOT EXISTS {p}locks (
        name VARCHAR(128) NOT NULL,
        slot INT NOT NULL,
        owner VARCHAR(255) NULL,
        token VARCHAR(64) NULL,
        fence BIGINT NOT NULL,
        acquired_at DATETIME(6) NULL,
        expires_at DATETIME(6) NULL,
        slots INT NULL,
        PRIMARY KEY (name, slot)
      ) ${TABLE_OPTS}`,
      // alert_states: one row per alert rule; episode moves by compare-and-set, one notification each
      `CREATE TABLE IF NOT EXISTS {p}alert_states (
        rule VARCHAR(255) NOT NULL,
        state VARCHAR(16) NOT NULL,
        episode INT NOT NULL,
        since DATETIME(6) NOT NULL,
        value DOUBLE NULL,
        updated_at DATETIME(6) NOT NULL,
        PRIMARY KEY (rule)
      ) ${TABLE_OPTS}`,
      // queue_states: one row per queue ever paused or resumed; claims leave out the paused ones
      `CREATE TABLE IF NOT EXISTS {p}queue_states (
        queue VARCHAR(128) NOT NULL,
        paused TINYINT(1) NOT NULL,
        paused_at DATETIME(6) NULL,
        updated_at DATETIME(6) NOT NULL,
        PRIMARY KEY (queue)
      ) ${TABLE_OPTS}`,
      // flow_buckets: a limited type's row (named by the type) serialises its limited claims; rate
      // buckets are rows named by core/flow.ts bucketName; NULL tokens: no bucket stored yet (full)
      `CREATE TABLE IF NOT EXISTS {p}flow_buckets (
        name VARCHAR(512) NOT NULL,
        tokens DOUBLE NULL,
        refilled_at DATETIME(6) NULL,
        PRIMARY KEY (name)
      ) ${TABLE_OPTS}`,
      // job_events: an operator's changes to a job (retried, cancelled), written in the change's transaction; found by job
      `CREATE TABLE IF NOT EXISTS {p}job_events (
        id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, job_id BIGINT UNSIGNED NOT NULL, at DATETIME(6) NOT NULL,
        kind VARCHAR(16) NOT NULL, actor VARCHAR(255) NOT NULL, source VARCHAR(255) NULL, detail LONGTEXT NOT NULL,
        PRIMARY KEY (id), KEY {p}job_events_job (job_id, id)
      ) ${TABLE_OPTS}`,
      // attempt_rollups: ended attempts of a closed 15-minute slot counted once (core/chart-rollups.ts) by outcome,
      // failures by type, run-time and wait bins, and a 'slot' row saying it was counted; read by the charts
      `CREATE TABLE IF NOT EXISTS {p}attempt_rollups (
        slot_at DATETIME(6) NOT NULL, kind VARCHAR(16) NOT NULL, label VARCHAR(128) NOT NULL, n BIGINT NOT NULL,
        PRIMARY KEY (slot_at, kind, label)
      ) ${TABLE_OPTS}`,
      // the workflow tables: dependencies and batches (workflows.ts)
      ...WORKFLOW_TABLES.map((t) => `${t} ${TABLE_OPTS}`),
    ],
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** The ledger table itself; created before anything else, outside the numbered migrations. */
const LEDGER_DDL = `CREATE TABLE IF NOT EXISTS {p}migrations (
  version INT NOT NULL,
  name VARCHAR(255) NOT NULL,
  applied_at DATETIME(6) NOT NULL,
  PRIMARY KEY (version)
) ${TABLE_OPTS}`;

const SQL = {
  version: `-- leasehold version: server version string, for the SKIP LOCKED check
    SELECT VERSION() AS version`,
  lock: `-- leasehold migrateLock: take the per-database migration lock (server-wide name, hashed to fit 64 chars); waits up to 30 s
    SELECT GET_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?))), 30) AS got`,
  unlock: `-- leasehold migrateUnlock: release the migration lock
    SELECT RELEASE_LOCK(CONCAT('leasehold_migrate_', SHA1(CONCAT(DATABASE(), ':', ?)))) AS released`,
  schemaVersion: (ledger: string): string => `-- leasehold schemaVersion: highest applied migration version (NULL: none)
    SELECT MAX(version) AS version FROM ${ledger}`,
  record: (ledger: string): string => `-- leasehold recordMigration: record one applied migration
    INSERT INTO ${ledger} (version, name, applied_at) VALUES (?, ?, ${NOW})`,
};

const ER_NO_SUCH_TABLE = 1146;

function render(sql: string, prefix: string, collate: string): string {
  return sql.replaceAll('{p}', prefix).replaceAll('{collate}', collate);
}

/** Highest applied version; 0 when the ledger does not exist yet. */
async function readVersion(c: Queryable, ledger: string): Promise<number> {
  try {
    return Number((await run(c, SQL.schemaVersion(ledger)))[0]?.version ?? 0);
  } catch (e) {
    if ((e as { errno?: unknown }).errno === ER_NO_SUCH_TABLE) return 0;
    throw e;
  }
}

export function schemaVersion(db: Db): Promise<number> {
  return db.one('schemaVersion', (c) => readVersion(c, db.t.ledger));
}

/** Apply pending migrations on one dedicated connection, under the migration lock. */
export function migrate(db: Db): Promise<MigrateResult> {
  return withRetry('migrate', () => db.leased(async (c) => {
    const server = checkServerVersion(String((await run(c, SQL.version))[0]?.version ?? ''));
    if (Number((await run(c, SQL.lock, [db.prefix]))[0]?.got) !== 1) {
      throw new TransientStorageError('mysql migrate: timed out after 30 s waiting for another process to finish migrating');
    }
    try {
      await exec(c, render(LEDGER_DDL, db.prefix, server.collation));
      const from = await readVersion(c, db.t.ledger);
      if (from > SCHEMA_VERSION) throw new SchemaTooNewError(from, SCHEMA_VERSION);
      const applied: MigrateResult['applied'] = [];
      for (const m of MIGRATIONS.filter((x) => x.version > from)) {
        for (const stmt of m.sql) await exec(c, render(stmt, db.prefix, server.collation));
        await exec(c, SQL.record(db.t.ledger), [m.version, m.name]);
        applied.push({ version: m.version, name: m.name });
      }
      return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
    } finally {
      await run(c, SQL.unlock, [db.prefix]).catch(() => undefined);
    }
  }), true);
}
