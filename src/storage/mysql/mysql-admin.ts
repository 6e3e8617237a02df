/**
 * Migration runner and the admin paths of the MySQL/MariaDB adapter. SQL lives in
 * mysql-sql.ts and mysql-migrations.ts.
 */
import { SchemaTooNewError, TransientStorageError } from '../../core/errors.js';
import type { JobRow, MigrateResult, PruneParams } from '../../core/storage.js';
import type { Leased, Queryable } from './mysql-db.js';
import { exec, micros, parseUtc, run, toJobRow } from './mysql-db.js';
import { LATEST_MYSQL_VERSION, LEDGER_DDL, MYSQL_MIGRATIONS, checkServerVersion, renderDdl } from './mysql-migrations.js';
import type { MysqlSql } from './mysql-sql.js';

const ER_NO_SUCH_TABLE = 1146;
const ER_DUP_FIELDNAME = 1060;
const ER_DUP_KEYNAME = 1061;

/** Highest applied version; 0 when the ledger does not exist yet. */
export async function readSchemaVersion(c: Queryable, sql: MysqlSql): Promise<number> {
  try {
    const rows = await run(c, sql.schemaVersion);
    return Number(rows[0]?.version ?? 0);
  } catch (e) {
    if ((e as { errno?: unknown }).errno === ER_NO_SUCH_TABLE) return 0;
    throw e;
  }
}

/**
 * Apply pending migrations on one dedicated connection, under a named lock so that concurrent
 * migrators take turns; the second one finds nothing left to do.
 */
export async function migrateOn(c: Leased, sql: MysqlSql, prefix: string): Promise<MigrateResult> {
  const version = String((await run(c, sql.version))[0]?.version ?? '');
  const server = checkServerVersion(version);
  const got = (await run(c, sql.migrateLock, [prefix]))[0]?.got;
  if (Number(got) !== 1) throw new TransientStorageError('mysql migrate: timed out after 30 s waiting for another process to finish migrating');
  try {
    await exec(c, renderDdl(LEDGER_DDL, prefix, server.collation));
    const from = await readSchemaVersion(c, sql);
    if (from > LATEST_MYSQL_VERSION) throw new SchemaTooNewError(from, LATEST_MYSQL_VERSION);
    const applied: MigrateResult['applied'] = [];
    for (const m of MYSQL_MIGRATIONS) {
      if (m.version <= from) continue;
      for (const stmt of m.sql) {
        // a re-run after a crash half way: the column/key of an atomic ALTER already exists
        await exec(c, renderDdl(stmt, prefix, server.collation)).catch((e: { errno?: unknown }) => {
          if (e.errno !== ER_DUP_FIELDNAME && e.errno !== ER_DUP_KEYNAME) throw e;
        });
      }
      await exec(c, sql.recordMigration, [m.version, m.name]);
      applied.push({ version: m.version, name: m.name });
    }
    return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
  } finally {
    await run(c, sql.migrateUnlock, [prefix]).catch(() => undefined);
  }
}

/** Admin "retry now" on `c` inside a transaction. */
export async function retryJobOn(c: Queryable, sql: MysqlSql, id: bigint): Promise<{ job: JobRow | null; applied: boolean }> {
  const res = await exec(c, sql.retryJob, [id]);
  const rows = await run(c, sql.jobById, [id]);
  return { job: rows[0] ? toJobRow(rows[0]) : null, applied: res.affectedRows > 0 };
}

/**
 * Admin cancel on `c` inside a transaction; a running attempt ends as cancelled: its history row
 * is written from the job row as locked before the cancel (or, opened by a schema-2 claim, closed).
 */
export async function cancelJobOn(c: Queryable, sql: MysqlSql, id: bigint): Promise<{ job: JobRow | null; applied: boolean }> {
  const before = await run(c, sql.jobForUpdate, [id]);
  const prev = before[0];
  if (!prev) return { job: null, applied: false };
  const message = 'cancelled by an operator';
  const res = await exec(c, sql.cancelJob, [message, id]);
  const applied = res.affectedRows > 0;
  const after = await run(c, sql.jobById, [id]);
  if (applied && after[0] && prev.status === 'running' && prev.lease_token !== null) {
    // started_at as the text read (exact to the µs), ended when the job row says, as a finish writes it
    const started = String(prev.started_at);
    const ended = String(after[0].finished_at);
    const row = [id, Number(prev.attempts), String(prev.locked_by), String(prev.lease_token), started, ended, parseUtc(ended).getTime() - parseUtc(started).getTime()];
    await exec(c, sql.insertAttempts(1), [...row, 'cancelled', 'CANCELLED', message, null, null]);
  }
  return { job: after[0] ? toJobRow(after[0]) : null, applied };
}

/**
 * Delete finished jobs past retention, and their attempts, on `c` inside a READ COMMITTED
 * transaction: its locking scan of jobs_prune (finished_at) then locks only the rows it picks.
 * Under REPEATABLE READ it would also lock the gap before the oldest finished_at, where every
 * new job's entry (finished_at NULL) goes: enqueues would wait for the prune to commit.
 */
export async function pruneOn(c: Queryable, sql: MysqlSql, p: PruneParams): Promise<number> {
  if (p.statuses.length === 0 || p.limit <= 0) return 0;
  const rows = await run(c, sql.pruneCandidates, [p.statuses, micros(p.olderThanMs), p.limit]);
  if (rows.length === 0) return 0;
  const ids = rows.map((r) => BigInt(String(r.id)));
  await exec(c, sql.pruneAttempts, [ids]);
  const res = await exec(c, sql.pruneJobs, [ids]);
  return res.affectedRows;
}
