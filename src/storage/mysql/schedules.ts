/**
 * Recurring schedules on MySQL/MariaDB (semantics: the header of src/core/schedules.ts).
 *
 * fire: the compare-and-set UPDATE of next_run_at takes the schedule's row lock; a second
 * scheduler's UPDATE waits, then reads the committed row (an UPDATE is a current read) and
 * matches nothing. One job per slot: the unique (schedule_name, slot_at) key refuses a second.
 */
import type { FireScheduleParams, FireScheduleResult, MisfirePolicy, ScheduledJob, ScheduleRow, ScheduleSource, ScheduleUpsert } from '../../core/schedules.js';
import type { JobRow, ScheduleStore } from '../../core/storage.js';
import { type Db, type Queryable, exec, isDuplicate, run } from './db.js';
import { NOW, type Row, type Tables, parseUtc, parseUtcOrNull, sharedSql, toJobRow, toJsonText, utcLiteralOrNull as lit } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { wakeupsOf } from './wakeups.js';

export function schedulesSql(t: Tables) {
  return {
    ...sharedSql(t),
    // ON DUPLICATE KEY UPDATE assigns left to right with the new values, so next_run_at comes first
    upsert: `-- leasehold upsertSchedule: insert or change a schedule (enabled, created_at kept; next_run_at kept unless the timing changed)
      INSERT INTO ${t.schedules} (name, cron, every_ms, timezone, type, payload, queue, priority, max_attempts, misfire,
        misfire_window_ms, misfire_max, enabled, source, next_run_at, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS DATETIME(6)), ${NOW}, ${NOW})
      ON DUPLICATE KEY UPDATE
        next_run_at = IF(cron <=> VALUES(cron) AND every_ms <=> VALUES(every_ms) AND timezone = VALUES(timezone), next_run_at, VALUES(next_run_at)),
        cron = VALUES(cron), every_ms = VALUES(every_ms), timezone = VALUES(timezone), type = VALUES(type), payload = VALUES(payload),
        queue = VALUES(queue), priority = VALUES(priority), max_attempts = VALUES(max_attempts), misfire = VALUES(misfire),
        misfire_window_ms = VALUES(misfire_window_ms), misfire_max = VALUES(misfire_max), source = VALUES(source), updated_at = VALUES(updated_at)`,
    codeNames: `-- leasehold syncSchedules: names of code-declared schedules, locked (sync deletes those no longer declared)
      SELECT name FROM ${t.schedules} WHERE source = 'code' ORDER BY name FOR UPDATE`,
    get: `-- leasehold getSchedule: one schedule by name
      SELECT * FROM ${t.schedules} WHERE name = ?`,
    list: `-- leasehold listSchedules: every schedule by name
      SELECT * FROM ${t.schedules} ORDER BY name`,
    remove: `-- leasehold removeSchedule: delete a schedule (its jobs stay)
      DELETE FROM ${t.schedules} WHERE name = ?`,
    setEnabled: `-- leasehold setScheduleEnabled: enable or disable, next_run_at replaced when asked
      UPDATE ${t.schedules} SET enabled = ?, next_run_at = IF(?, CAST(? AS DATETIME(6)), next_run_at), updated_at = ${NOW} WHERE name = ?`,
    due: `-- leasehold dueSchedules: enabled schedules due now, oldest slot first
      SELECT * FROM ${t.schedules} WHERE enabled = 1 AND next_run_at <= ${NOW} ORDER BY next_run_at, name LIMIT ?`,
    advance: `-- leasehold fireSchedule: compare-and-set of next_run_at, landing only for the scheduler that read the expected value
      UPDATE ${t.schedules} SET next_run_at = CAST(? AS DATETIME(6)), last_run_at = ${NOW},
        last_slot_at = COALESCE(CAST(? AS DATETIME(6)), last_slot_at), updated_at = ${NOW}
      WHERE name = ? AND enabled = 1 AND next_run_at = CAST(? AS DATETIME(6))`,
    touch: `-- leasehold runScheduleNow: record a run-now on the schedule
      UPDATE ${t.schedules} SET last_run_at = ${NOW} WHERE name = ?`,
    insertSlotJob: `-- leasehold insertSlotJob: one job for a schedule's slot (now when none); a second for the slot is a duplicate-key error
      INSERT INTO ${t.jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
        created_at, updated_at, schedule_name, slot_at)
      VALUES (?, ?, ?, 'queued', ?, ${NOW}, 0, ?, ?, ?, ${NOW}, ${NOW}, ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW}))`,
  };
}

type SchedulesSql = ReturnType<typeof schedulesSql>;

export class MysqlSchedules extends SqlAggregate<Db, SchedulesSql> implements ScheduleStore {
  constructor(db: Db) {
    super(db, schedulesSql(db.t));
  }

  upsert(p: { items: readonly ScheduleUpsert[] }): Promise<ScheduleRow[]> {
    return this.db.tx('upsertSchedules', async (c) => {
      const out: ScheduleRow[] = [];
      for (const u of p.items) out.push(await this.upsertOn(c, u));
      return out;
    });
  }

  sync(p: { items: readonly ScheduleUpsert[] }): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
    return this.db.tx('syncSchedules', async (c) => {
      const schedules: ScheduleRow[] = [];
      for (const u of p.items) schedules.push(await this.upsertOn(c, { ...u, source: 'code' }));
      const keep = new Set(p.items.map((i) => i.name));
      const removed = (await run(c, this.sql.codeNames)).map((r) => String(r.name)).filter((n) => !keep.has(n));
      for (const n of removed) await exec(c, this.sql.remove, [n]);
      return { schedules, removed };
    });
  }

  private async upsertOn(c: Queryable, u: ScheduleUpsert): Promise<ScheduleRow> {
    await exec(c, this.sql.upsert, [
      u.name, u.cron, u.everyMs, u.timezone, u.type, toJsonText(u.payload) ?? 'null', u.queue, u.priority, u.maxAttempts, u.misfire,
      u.misfireWindowMs, u.misfireMax, u.enabled ? 1 : 0, u.source, lit(u.nextRunAt),
    ]);
    const [row] = await run(c, this.sql.get, [u.name]);
    return toScheduleRow(row as Row);
  }

  async get(p: { name: string }): Promise<ScheduleRow | null> {
    const [r] = await this.db.one('getSchedule', (c) => run(c, this.sql.get, [p.name]));
    return r ? toScheduleRow(r) : null;
  }

  async list(): Promise<ScheduleRow[]> {
    return (await this.db.one('listSchedules', (c) => run(c, this.sql.list))).map(toScheduleRow);
  }

  async remove(p: { name: string }): Promise<boolean> {
    return (await this.db.one('removeSchedule', (c) => exec(c, this.sql.remove, [p.name]))).affectedRows > 0;
  }

  async setEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const values = [p.enabled ? 1 : 0, p.nextRunAt !== undefined ? 1 : 0, lit(p.nextRunAt ?? null), p.name];
    await this.db.one('setScheduleEnabled', (c) => exec(c, this.sql.setEnabled, values));
    return this.get({ name: p.name });
  }

  async due(p: { limit: number }): Promise<ScheduleRow[]> {
    return (await this.db.one('dueSchedules', (c) => run(c, this.sql.due, [p.limit]))).map(toScheduleRow);
  }

  async fire(p: FireScheduleParams): Promise<FireScheduleResult> {
    const out = await this.db.tx('fireSchedule', async (c): Promise<FireScheduleResult> => {
      const lastSlot = p.slots.length ? new Date(Math.max(...p.slots.map((d) => d.getTime()))) : null;
      const moved = await exec(c, this.sql.advance, [lit(p.nextRunAt), lit(lastSlot), p.name, lit(p.expectedNextRunAt)]);
      if (moved.affectedRows === 0) return { applied: false, jobIds: [], duplicates: 0 };
      const jobIds: string[] = [];
      for (const slot of p.slots) {
        const id = await this.insertSlotJob(c, p.name, slot, p.job);
        if (id !== null) jobIds.push(id);
      }
      return { applied: true, jobIds, duplicates: p.slots.length - jobIds.length };
    });
    // a slot's job is due at once: workers elsewhere may run its type
    if (out.jobIds.length > 0) wakeupsOf(this.db).jobsDue();
    return out;
  }

  async runNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
    const row = await this.db.tx('runScheduleNow', async (c) => {
      if ((await run(c, this.sql.get, [p.name])).length === 0) return null;
      await exec(c, this.sql.touch, [p.name]);
      const id = await this.insertSlotJob(c, p.name, null, p.job);
      if (id === null) return null;
      const [row] = await run(c, this.sql.jobById, [BigInt(id)]);
      return row ? toJobRow(row) : null;
    });
    if (row) wakeupsOf(this.db).jobsDue();
    return row;
  }

  private async insertSlotJob(c: Queryable, name: string, slot: Date | null, j: ScheduledJob): Promise<string | null> {
    try {
      const values = [j.queue, j.type, toJsonText(j.payload) ?? 'null', j.priority, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, name, lit(slot)];
      return String((await exec(c, this.sql.insertSlotJob, values)).insertId);
    } catch (e) {
      // the slot already has its job: only this statement is rolled back, the transaction goes on
      if (isDuplicate(e)) return null;
      throw e;
    }
  }
}

function toScheduleRow(r: Row): ScheduleRow {
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
