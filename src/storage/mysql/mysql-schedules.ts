/**
 * Schedules and locks on MySQL 8 / MariaDB 10.6+: the SQL (one header line each) and the write
 * paths MysqlStorage delegates to, each run on a connection inside the adapter's transaction
 * runner. Semantics: the header of src/core/schedules.ts.
 *
 * fireSchedule: the compare-and-set UPDATE takes the schedule's row lock; a second scheduler's
 * UPDATE waits, then reads the committed row (UPDATE is a current read) and matches nothing.
 * Locks: the per-name counter row (slot -1) is locked FOR UPDATE first, serialising acquirers.
 * ON DUPLICATE KEY UPDATE assigns left to right with the new values, so next_run_at comes first.
 */
import { randomBytes } from 'node:crypto';
import type {
  AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, MisfirePolicy, ScheduledJob, ScheduleRow,
  ScheduleSource, ScheduleUpsert,
} from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { JobRow } from '../../core/storage.js';
import type { Queryable, Row } from './mysql-db.js';
import { exec, micros, parseUtc, parseUtcOrNull, run, toJobRow, toJsonText, utcLiteral } from './mysql-db.js';

const NOW = 'UTC_TIMESTAMP(6)';
const ER_DUP_ENTRY = 1062;
const lit = (d: Date | null): string | null => (d === null ? null : utcLiteral(d));

export type MysqlScheduleSql = ReturnType<typeof mysqlScheduleSql>;

export function mysqlScheduleSql(prefix: string) {
  const sch = `${prefix}schedules`;
  const jobs = `${prefix}jobs`;
  const locks = `${prefix}locks`;
  return {
    /** Insert or change a schedule (enabled, created_at kept; next_run_at kept unless the timing changed). */
    upsert: `INSERT INTO ${sch} (name, cron, every_ms, timezone, type, payload, queue, priority, max_attempts, misfire,
        misfire_window_ms, misfire_max, enabled, source, next_run_at, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS DATETIME(6)), ${NOW}, ${NOW})
      ON DUPLICATE KEY UPDATE
        next_run_at = IF(cron <=> VALUES(cron) AND every_ms <=> VALUES(every_ms) AND timezone = VALUES(timezone), next_run_at, VALUES(next_run_at)),
        cron = VALUES(cron), every_ms = VALUES(every_ms), timezone = VALUES(timezone), type = VALUES(type), payload = VALUES(payload),
        queue = VALUES(queue), priority = VALUES(priority), max_attempts = VALUES(max_attempts), misfire = VALUES(misfire),
        misfire_window_ms = VALUES(misfire_window_ms), misfire_max = VALUES(misfire_max), source = VALUES(source), updated_at = VALUES(updated_at)`,
    /** Names of code-declared schedules (sync deletes those no longer declared). */
    codeNames: `SELECT name FROM ${sch} WHERE source = 'code' ORDER BY name FOR UPDATE`,
    /** One schedule by name. */
    get: `SELECT * FROM ${sch} WHERE name = ?`,
    /** Every schedule by name. */
    list: `SELECT * FROM ${sch} ORDER BY name`,
    /** Delete a schedule (its jobs stay). */
    remove: `DELETE FROM ${sch} WHERE name = ?`,
    /** Enable/disable, optionally replacing next_run_at. */
    setEnabled: `UPDATE ${sch} SET enabled = ?, next_run_at = IF(?, CAST(? AS DATETIME(6)), next_run_at), updated_at = ${NOW} WHERE name = ?`,
    /** Enabled schedules due now, oldest slot first. */
    due: `SELECT * FROM ${sch} WHERE enabled = 1 AND next_run_at <= ${NOW} ORDER BY next_run_at, name LIMIT ?`,
    /** Compare-and-set of next_run_at: lands only for the scheduler that read the expected value. */
    advance: `UPDATE ${sch} SET next_run_at = CAST(? AS DATETIME(6)), last_run_at = ${NOW},
        last_slot_at = COALESCE(CAST(? AS DATETIME(6)), last_slot_at), updated_at = ${NOW}
      WHERE name = ? AND enabled = 1 AND next_run_at = CAST(? AS DATETIME(6))`,
    /** Record a run-now on the schedule. */
    touch: `UPDATE ${sch} SET last_run_at = ${NOW} WHERE name = ?`,
    /** One job for a slot; the unique (schedule_name, slot_at) key refuses a second one (ER_DUP_ENTRY). */
    insertSlotJob: `INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
        created_at, updated_at, schedule_name, slot_at)
      VALUES (?, ?, ?, 'queued', ?, ${NOW}, 0, ?, ?, ?, ${NOW}, ${NOW}, ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW}))`,
    /** A job by id (after a slot insert). */
    jobById: `SELECT * FROM ${jobs} WHERE id = ?`,
    /** The per-name fence counter row of a lock (slot -1), created on first use. */
    ensureCounter: `INSERT INTO ${locks} (name, slot, fence) VALUES (?, -1, 0) ON DUPLICATE KEY UPDATE fence = fence`,
    /** Serialise acquirers of one lock name on its counter row; the slot count it was last granted with. */
    lockCounter: `SELECT fence, slots FROM ${locks} WHERE name = ? AND slot = -1 FOR UPDATE`,
    /** Slots of a lock name held right now. */
    heldSlots: `SELECT slot FROM ${locks} WHERE name = ? AND slot >= 0 AND token IS NOT NULL AND expires_at > ${NOW}`,
    /** Issue the next fencing token of a name and record the slot count granted. */
    bumpFence: `UPDATE ${locks} SET fence = fence + 1, slots = ? WHERE name = ? AND slot = -1`,
    /** Take a free (or expired) slot. */
    take: `INSERT INTO ${locks} (name, slot, owner, token, fence, acquired_at, expires_at)
      VALUES (?, ?, ?, ?, ?, ${NOW}, ${NOW} + INTERVAL ? MICROSECOND)
      ON DUPLICATE KEY UPDATE owner = VALUES(owner), token = VALUES(token), fence = VALUES(fence),
        acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at)`,
    /** Expiry of one slot (read back after taking it). */
    expiry: `SELECT expires_at FROM ${locks} WHERE name = ? AND slot = ?`,
    /** Extend a holding that has not expired, by its token. */
    extend: `UPDATE ${locks} SET expires_at = ${NOW} + INTERVAL ? MICROSECOND
      WHERE name = ? AND slot >= 0 AND token = ? AND expires_at > ${NOW}`,
    /** Release a holding that has not expired, by its token. */
    release: `UPDATE ${locks} SET token = NULL, owner = NULL, expires_at = ${NOW}
      WHERE name = ? AND slot >= 0 AND token = ? AND expires_at > ${NOW}`,
    /** Held (or expired, never released) lock rows by name and slot. */
    listLocks: `SELECT name, slot, owner, fence, acquired_at, expires_at, expires_at <= ${NOW} AS expired FROM ${locks}
      WHERE slot >= 0 AND token IS NOT NULL AND (? IS NULL OR name = ?) ORDER BY name, slot`,
  };
}

export function toScheduleRow(r: Row): ScheduleRow {
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    name: String(r.name), cron: r.cron == null ? null : String(r.cron), everyMs: num(r.every_ms), timezone: String(r.timezone),
    type: String(r.type), payload: JSON.parse(String(r.payload)) as unknown, queue: String(r.queue), priority: Number(r.priority),
    maxAttempts: Number(r.max_attempts), misfire: String(r.misfire) as MisfirePolicy, misfireWindowMs: num(r.misfire_window_ms),
    misfireMax: Number(r.misfire_max), enabled: Number(r.enabled) === 1, source: String(r.source) as ScheduleSource,
    nextRunAt: parseUtcOrNull(r.next_run_at), lastRunAt: parseUtcOrNull(r.last_run_at), lastSlotAt: parseUtcOrNull(r.last_slot_at),
    createdAt: parseUtc(r.created_at), updatedAt: parseUtc(r.updated_at),
  };
}

export async function upsertOn(c: Queryable, sql: MysqlScheduleSql, u: ScheduleUpsert): Promise<ScheduleRow> {
  await exec(c, sql.upsert, [
    u.name, u.cron, u.everyMs, u.timezone, u.type, toJsonText(u.payload) ?? 'null', u.queue, u.priority, u.maxAttempts, u.misfire,
    u.misfireWindowMs, u.misfireMax, u.enabled ? 1 : 0, u.source, lit(u.nextRunAt),
  ]);
  const [row] = await run(c, sql.get, [u.name]);
  return toScheduleRow(row as Row);
}

export async function syncOn(c: Queryable, sql: MysqlScheduleSql, items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
  const schedules: ScheduleRow[] = [];
  for (const u of items) schedules.push(await upsertOn(c, sql, { ...u, source: 'code' }));
  const keep = new Set(items.map((i) => i.name));
  const removed = (await run(c, sql.codeNames)).map((r) => String(r.name)).filter((n) => !keep.has(n));
  for (const n of removed) await exec(c, sql.remove, [n]);
  return { schedules, removed };
}

async function insertSlotJob(c: Queryable, sql: MysqlScheduleSql, name: string, slot: Date | null, j: ScheduledJob): Promise<string | null> {
  try {
    const res = await exec(c, sql.insertSlotJob, [
      j.queue, j.type, toJsonText(j.payload) ?? 'null', j.priority, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, name, lit(slot),
    ]);
    return String(res.insertId);
  } catch (e) {
    // the slot already has its job: only this statement is rolled back, the transaction goes on
    if ((e as { errno?: unknown }).errno === ER_DUP_ENTRY) return null;
    throw e;
  }
}

export async function fireOn(c: Queryable, sql: MysqlScheduleSql, p: FireScheduleParams): Promise<FireScheduleResult> {
  const lastSlot = p.slots.length ? new Date(Math.max(...p.slots.map((d) => d.getTime()))) : null;
  const moved = await exec(c, sql.advance, [lit(p.nextRunAt), lit(lastSlot), p.name, lit(p.expectedNextRunAt)]);
  if (moved.affectedRows === 0) return { applied: false, jobIds: [], duplicates: 0 };
  const jobIds: string[] = [];
  let duplicates = 0;
  for (const slot of p.slots) {
    const id = await insertSlotJob(c, sql, p.name, slot, p.job);
    if (id === null) duplicates++;
    else jobIds.push(id);
  }
  return { applied: true, jobIds, duplicates };
}

export async function runNowOn(c: Queryable, sql: MysqlScheduleSql, p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
  if ((await run(c, sql.get, [p.name])).length === 0) return null;
  await exec(c, sql.touch, [p.name]);
  const id = await insertSlotJob(c, sql, p.name, null, p.job);
  if (id === null) return null;
  const [row] = await run(c, sql.jobById, [BigInt(id)]);
  return row ? toJobRow(row) : null;
}

/** Inside a READ COMMITTED transaction, after `ensureCounter` committed on its own. */
export async function acquireOn(c: Queryable, sql: MysqlScheduleSql, p: AcquireLockParams): Promise<LockGrant | null> {
  const [counter] = await run(c, sql.lockCounter, [p.name]);
  const held = new Set((await run(c, sql.heldSlots, [p.name])).map((r) => Number(r.slot)));
  checkLockSlots(p.name, counter?.slots == null ? null : Number(counter.slots), p.slots, held.size);
  let slot = 0;
  while (slot < p.slots && held.has(slot)) slot++;
  if (slot >= p.slots) return null;
  await exec(c, sql.bumpFence, [p.slots, p.name]);
  const fence = Number(counter?.fence ?? 0) + 1;
  const token = randomBytes(16).toString('hex');
  await exec(c, sql.take, [p.name, slot, p.owner, token, fence, micros(p.ttlMs)]);
  const [e] = await run(c, sql.expiry, [p.name, slot]);
  return { name: p.name, slot, token, fence, expiresAt: parseUtc(e?.expires_at) };
}

export function toLockRow(r: Row): LockRow {
  return {
    name: String(r.name), slot: Number(r.slot), owner: r.owner == null ? '' : String(r.owner), fence: Number(r.fence),
    acquiredAt: parseUtc(r.acquired_at), expiresAt: parseUtc(r.expires_at), expired: Number(r.expired) === 1,
  };
}
