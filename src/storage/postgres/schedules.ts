/**
 * Recurring schedules (semantics: the header of src/core/schedules.ts). A fire is the
 * compare-and-set UPDATE of next_run_at and the slot inserts in one transaction; under READ
 * COMMITTED a second scheduler's UPDATE waits for the first, then re-checks
 * `next_run_at = expected` on the new row version and changes nothing.
 */
import type { FireScheduleParams, FireScheduleResult, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import type { JobRow, ScheduleStore } from '../../core/storage.js';
import { query, type Db, type Queryable, type Row } from './db.js';
import { NOW, jsonParam, toJobRow, toScheduleRow } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

function schedulesSql(s: string) {
  return {
    upsert: `-- leasehold upsertSchedule: insert or change a schedule (enabled and created_at kept; next_run_at kept unless the timing changed)
INSERT INTO ${s}.schedules AS cur (name, cron, every_ms, timezone, type, payload, queue, priority, max_attempts, misfire,
  misfire_window_ms, misfire_max, enabled, source, next_run_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9, $10, $11, $12, $13, $14, $15, ${NOW}, ${NOW})
ON CONFLICT (name) DO UPDATE SET
  next_run_at = CASE WHEN cur.cron IS NOT DISTINCT FROM excluded.cron AND cur.every_ms IS NOT DISTINCT FROM excluded.every_ms
    AND cur.timezone = excluded.timezone THEN cur.next_run_at ELSE excluded.next_run_at END,
  cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, type = excluded.type, payload = excluded.payload,
  queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts, misfire = excluded.misfire,
  misfire_window_ms = excluded.misfire_window_ms, misfire_max = excluded.misfire_max, source = excluded.source, updated_at = excluded.updated_at
RETURNING *`,
    removeMissing: `-- leasehold syncSchedules: delete code-declared schedules no longer declared
DELETE FROM ${s}.schedules WHERE source = 'code' AND NOT (name = ANY ($1::text[])) RETURNING name`,
    get: `-- leasehold getSchedule: one schedule by name
SELECT * FROM ${s}.schedules WHERE name = $1`,
    list: `-- leasehold listSchedules: every schedule by name
SELECT * FROM ${s}.schedules ORDER BY name`,
    remove: `-- leasehold removeSchedule: delete a schedule (its jobs stay)
DELETE FROM ${s}.schedules WHERE name = $1 RETURNING name`,
    setEnabled: `-- leasehold setScheduleEnabled: enable/disable a schedule, optionally replacing next_run_at
UPDATE ${s}.schedules SET enabled = $2, next_run_at = CASE WHEN $3 THEN $4::timestamptz ELSE next_run_at END, updated_at = ${NOW}
WHERE name = $1 RETURNING *`,
    due: `-- leasehold dueSchedules: enabled schedules due now, oldest slot first
SELECT * FROM ${s}.schedules WHERE enabled AND next_run_at <= ${NOW} ORDER BY next_run_at, name LIMIT $1`,
    advance: `-- leasehold fireSchedule: compare-and-set of next_run_at; lands only for the scheduler that read the expected value
UPDATE ${s}.schedules SET next_run_at = $2, last_run_at = ${NOW}, last_slot_at = coalesce($3, last_slot_at), updated_at = ${NOW}
WHERE name = $1 AND enabled AND next_run_at = $4 RETURNING name`,
    insertSlots: `-- leasehold fireSchedule: one job per slot; the unique (schedule_name, slot_at) index skips slots already enqueued
INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, schedule_name, slot_at)
SELECT $1, $2, $3::json, 'queued', $4, ${NOW}, 0, $5, $6, $7, $8, slot FROM unnest($9::timestamptz[]) AS slot
ON CONFLICT (schedule_name, slot_at) WHERE schedule_name IS NOT NULL DO NOTHING
RETURNING *`,
    touch: `-- leasehold runScheduleNow: record a run-now on the schedule (only if it exists)
UPDATE ${s}.schedules SET last_run_at = ${NOW} WHERE name = $1 RETURNING ${NOW} AS now`,
    notify: `-- leasehold fireSchedule: wake idle workers (delivered on commit)
SELECT pg_notify($1, $2)`,
  };
}

export class PostgresSchedules extends SqlAggregate<Db, ReturnType<typeof schedulesSql>> implements ScheduleStore {
  constructor(db: Db) {
    super(db, schedulesSql(db.q));
  }

  private async upsertOn(c: Queryable, u: ScheduleUpsert): Promise<ScheduleRow> {
    const [row] = await query(c, 'upsertSchedules', this.sql.upsert, [
      u.name, u.cron, u.everyMs, u.timezone, u.type, jsonParam(u.payload), u.queue, u.priority, u.maxAttempts, u.misfire,
      u.misfireWindowMs, u.misfireMax, u.enabled, u.source, u.nextRunAt,
    ]);
    return toScheduleRow(row as Row);
  }

  upsert(p: { items: readonly ScheduleUpsert[] }): Promise<ScheduleRow[]> {
    return this.db.transaction('upsertSchedules', async (c) => {
      const out: ScheduleRow[] = [];
      for (const u of p.items) out.push(await this.upsertOn(c, u));
      return out;
    });
  }

  sync(p: { items: readonly ScheduleUpsert[] }): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
    return this.db.transaction('syncSchedules', async (c) => {
      const schedules: ScheduleRow[] = [];
      for (const u of p.items) schedules.push(await this.upsertOn(c, { ...u, source: 'code' }));
      const gone = await query(c, 'syncSchedules', this.sql.removeMissing, [p.items.map((i) => i.name)]);
      return { schedules, removed: gone.map((r) => String(r.name)).sort() };
    });
  }

  async get(p: { name: string }): Promise<ScheduleRow | null> {
    const [r] = await this.db.run('getSchedule', this.sql.get, [p.name]);
    return r ? toScheduleRow(r) : null;
  }

  async list(): Promise<ScheduleRow[]> {
    return (await this.db.run('listSchedules', this.sql.list)).map(toScheduleRow);
  }

  async remove(p: { name: string }): Promise<boolean> {
    return (await this.db.run('removeSchedule', this.sql.remove, [p.name])).length > 0;
  }

  async setEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const [r] = await this.db.run('setScheduleEnabled', this.sql.setEnabled, [p.name, p.enabled, p.nextRunAt !== undefined, p.nextRunAt ?? null]);
    return r ? toScheduleRow(r) : null;
  }

  async due(p: { limit: number }): Promise<ScheduleRow[]> {
    return (await this.db.run('dueSchedules', this.sql.due, [p.limit])).map(toScheduleRow);
  }

  fire(p: FireScheduleParams): Promise<FireScheduleResult> {
    const lastSlot = p.slots.length ? new Date(Math.max(...p.slots.map((d) => d.getTime()))) : null;
    return this.db.transaction('fireSchedule', async (c): Promise<FireScheduleResult> => {
      const moved = await query(c, 'fireSchedule', this.sql.advance, [p.name, p.nextRunAt, lastSlot, p.expectedNextRunAt]);
      if (moved.length === 0) return { applied: false, jobIds: [], duplicates: 0 };
      const rows = p.slots.length === 0 ? [] : await this.insertSlots(c, p.name, p.job, p.slots);
      if (rows.length > 0) await query(c, 'fireSchedule', this.sql.notify, this.db.notify);
      return { applied: true, jobIds: rows.map((r) => String(r.id)), duplicates: p.slots.length - rows.length };
    });
  }

  runNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
    return this.db.transaction('runScheduleNow', async (c) => {
      const [touched] = await query(c, 'runScheduleNow', this.sql.touch, [p.name]);
      if (!touched) return null;
      const [row] = await this.insertSlots(c, p.name, p.job, [touched.now as Date]);
      if (row) await query(c, 'runScheduleNow', this.sql.notify, this.db.notify);
      return row ? toJobRow(row) : null;
    });
  }

  private insertSlots(c: Queryable, name: string, j: ScheduledJob, slots: readonly Date[]): Promise<Row[]> {
    return query(c, 'fireSchedule', this.sql.insertSlots, [j.queue, j.type, jsonParam(j.payload), j.priority, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, name, slots]);
  }
}
