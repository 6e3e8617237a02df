/**
 * Versioned, forward-only schema migrations for MySQL 8.0.4+ / MariaDB 10.6+, and the server
 * version check. A version number means the same change in every dialect that has it (4 to 8
 * are other dialects' own; 9 is in every one).
 *
 * DDL commits on its own in MySQL, so a migration cannot be rolled back half way: every step
 * is idempotent (`CREATE TABLE IF NOT EXISTS`, indexes declared inside it) and the ledger row
 * is written last. Two processes migrating at once serialise on a named lock (GET_LOCK).
 *
 * In the SQL, `{p}` is the table prefix and `{collate}` the server's binary, no-pad collation
 * (exact, case- and trailing-space-sensitive matching of types, queues and keys).
 */
import { LeaseholdError } from '../../core/errors.js';

export interface MysqlMigration {
  version: number;
  name: string;
  sql: readonly string[];
}

const TABLE_OPTS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collate}';

export const MYSQL_MIGRATIONS: readonly MysqlMigration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: [
      // jobs: one row per job; the claim, sweeper and prune paths each have an index
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
        PRIMARY KEY (id),
        UNIQUE KEY {p}jobs_idempotency_key (idempotency_key),
        KEY {p}jobs_claim (status, priority, run_at, id),
        KEY {p}jobs_sweep (status, locked_until),
        KEY {p}jobs_prune (status, finished_at)
      ) ${TABLE_OPTS}`,
      // job_attempts: one history row per attempt, closed by (job_id, lease_token)
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
        PRIMARY KEY (id),
        KEY {p}job_attempts_lease (job_id, lease_token)
      ) ${TABLE_OPTS}`,
      // effects: the ctx.once ledger; never pruned with the jobs
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
    ],
  },
  {
    version: 2,
    name: 'schedules, locks, job slots',
    sql: [
      // jobs a schedule enqueued carry its name and slot; one job per (schedule, slot). One ALTER is
      // atomic; re-running it after a crash fails with "duplicate column", which the runner skips.
      `ALTER TABLE {p}jobs ADD COLUMN schedule_name VARCHAR(128) NULL, ADD COLUMN slot_at DATETIME(6) NULL,
        ADD UNIQUE KEY {p}jobs_schedule_slot (schedule_name, slot_at)`,
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
      // locks: slot -1 of a name is its fence counter; slots 0..n-1 are the holdings
      `CREATE TABLE IF NOT EXISTS {p}locks (
        name VARCHAR(128) NOT NULL,
        slot INT NOT NULL,
        owner VARCHAR(255) NULL,
        token VARCHAR(64) NULL,
        fence BIGINT NOT NULL,
        acquired_at DATETIME(6) NULL,
        expires_at DATETIME(6) NULL,
        PRIMARY KEY (name, slot)
      ) ${TABLE_OPTS}`,
    ],
  },
  {
    version: 3,
    name: 'attempt rows written when the attempt ends; prune by finished_at alone',
    sql: [
      // an attempt's history row is now inserted once, by the write that ends the attempt (finish,
      // rescue, hand-back, cancel); while it runs, the job row holds it. The finish's INSERT … ON
      // DUPLICATE KEY UPDATE needs (job_id, lease_token) unique to close in place a row that a
      // worker of schema 2 opened at claim time. One ALTER under the same key name: a re-run after
      // a crash before the ledger row rebuilds the key again, harmlessly.
      `ALTER TABLE {p}job_attempts DROP KEY {p}job_attempts_lease, ADD UNIQUE KEY {p}job_attempts_lease (job_id, lease_token)`,
      // pruning by finished_at alone (status is filtered on the row): a claim, and a finish that
      // makes the job due again, leave finished_at NULL, so they no longer move the row in this
      // index as they did in (status, finished_at). Same key name, so the FORCE INDEX of schema-2
      // code still running during a deploy holds.
      `ALTER TABLE {p}jobs DROP KEY {p}jobs_prune, ADD KEY {p}jobs_prune (finished_at)`,
    ],
  },
  {
    version: 9,
    name: 'semaphores keep their slot count',
    sql: [
      // the counter row (slot -1) of a lock keeps the slot count it was last granted with: a caller
      // asking for another count while the semaphore is held is refused (NULL: none recorded yet)
      `ALTER TABLE {p}locks ADD COLUMN slots INT NULL`,
    ],
  },
];

export const LATEST_MYSQL_VERSION = MYSQL_MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);

/** The ledger table itself; created before anything else, outside the numbered migrations. */
export const LEDGER_DDL = `CREATE TABLE IF NOT EXISTS {p}migrations (
  version INT NOT NULL,
  name VARCHAR(255) NOT NULL,
  applied_at DATETIME(6) NOT NULL,
  PRIMARY KEY (version)
) ${TABLE_OPTS}`;

export function renderDdl(sql: string, prefix: string, collate: string): string {
  return sql.replaceAll('{p}', prefix).replaceAll('{collate}', collate);
}

export interface MysqlServerInfo {
  flavor: 'mysql' | 'mariadb';
  major: number;
  minor: number;
  patch: number;
  /** has `FOR UPDATE SKIP LOCKED` and `JSON_TABLE`: MySQL 8.0.4+, MariaDB 10.6+ */
  supported: boolean;
  /** exact-match collation for text columns */
  collation: string;
}

function atLeast(v: [number, number, number], min: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) {
    if (v[i]! !== min[i]!) return v[i]! > min[i]!;
  }
  return true;
}

/** Parse `SELECT VERSION()`: "8.0.36-0ubuntu…", "10.11.6-MariaDB-1:…", "5.5.5-10.6.12-MariaDB". */
export function parseServerVersion(version: string): MysqlServerInfo {
  const mariadb = /mariadb/i.test(version);
  const s = version.trim().replace(/^5\.5\.5-(?=\d+\.\d+\.\d+-MariaDB)/i, '');
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(s);
  if (!m) throw new LeaseholdError('UNSUPPORTED_SERVER', `cannot read the server version from "${version}"`);
  const v: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const supported = mariadb ? atLeast(v, [10, 6, 0]) : atLeast(v, [8, 0, 4]);
  const collation = mariadb ? 'utf8mb4_nopad_bin' : atLeast(v, [8, 0, 17]) ? 'utf8mb4_0900_bin' : 'utf8mb4_bin';
  return { flavor: mariadb ? 'mariadb' : 'mysql', major: v[0], minor: v[1], patch: v[2], supported, collation };
}

/** Throws `LeaseholdError('UNSUPPORTED_SERVER')` for servers without SKIP LOCKED or JSON_TABLE (the batched hot path). */
export function checkServerVersion(version: string): MysqlServerInfo {
  const info = parseServerVersion(version);
  if (!info.supported) {
    const need = info.flavor === 'mariadb' ? 'MariaDB 10.6 or newer' : 'MySQL 8.0.4 or newer';
    throw new LeaseholdError(
      'UNSUPPORTED_SERVER',
      `leasehold needs ${need} (for SELECT … FOR UPDATE SKIP LOCKED and JSON_TABLE); this server is ${info.flavor} ${version}`,
    );
  }
  return info;
}
