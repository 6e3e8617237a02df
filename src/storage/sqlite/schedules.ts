/**
 * Recurring schedules on SQLite. Every write runs in one BEGIN IMMEDIATE transaction, which
 * serialises writers across processes: a fire's compare-and-set on next_run_at and its jobs
 * land together or not at all. Semantics: the header of src/core/schedules.ts.
 */
import type { FireScheduleParams, FireScheduleResult, MisfirePolicy, ScheduledJob, ScheduleRow, ScheduleSource, ScheduleUpsert } from '../../core/schedules.js';
import type { JobRow, ScheduleStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { dateOrNull, jsonOrNull, NEXT_JOB_ID, toJobRow } from './sql.js';
import type { SqlJob } from './sql.js';

const SCHEDULE_SQL = {
  upsert: `-- leasehold schedules.upsert: insert a schedule, or change it keeping enabled/created_at, and next_run_at unless the timing changed
    INSERT INTO {p}schedules (name, cron, every_ms, timezone, type, payload, queue, priority, max_attempts, misfire,
      misfire_window_ms, misfire_max, enabled, source, next_run_at, created_at, updated_at)
    VALUES (@name, @cron, @everyMs, @timezone, @type, @payload, @queue, @priority, @maxAttempts, @misfire,
      @misfireWindowMs, @misfireMax, @enabled, @source, @nextRunAt, @now, @now)
    ON CONFLICT (name) DO UPDATE SET
      next_run_at = CASE WHEN {p}schedules.cron IS excluded.cron AND {p}schedules.every_ms IS excluded.every_ms
        AND {p}schedules.timezone = excluded.timezone THEN {p}schedules.next_run_at ELSE excluded.next_run_at END,
      cron = excluded.cron, every_ms = excluded.every_ms, timezone = excluded.timezone, type = excluded.type,
      payload = excluded.payload, queue = excluded.queue, priority = excluded.priority, max_attempts = excluded.max_attempts,
      misfire = excluded.misfire, misfire_window_ms = excluded.misfire_window_ms, misfire_max = excluded.misfire_max,
      source = excluded.source, updated_at = excluded.updated_at
    RETURNING *`,
  codeNames: `-- leasehold schedules.codeNames: names of code-declared schedules (sync removes those no longer declared)
    SELECT name FROM {p}schedules WHERE source = 'code' ORDER BY name`,
  get: `-- leasehold schedules.get: one schedule by name
    SELECT * FROM {p}schedules WHERE name = ?`,
  list: `-- leasehold schedules.list: every schedule by name
    SELECT * FROM {p}schedules ORDER BY name`,
  remove: `-- leasehold schedules.remove: delete a schedule (its jobs stay)
    DELETE FROM {p}schedules WHERE name = ?`,
  setEnabled: `-- leasehold schedules.setEnabled: enable/disable, optionally replacing next_run_at
    UPDATE {p}schedules SET enabled = @enabled,
      next_run_at = CASE WHEN @setNext = 1 THEN @nextRunAt ELSE next_run_at END, updated_at = @now
    WHERE name = @name RETURNING *`,
  due: `-- leasehold schedules.due: enabled schedules due now, oldest slot first
    SELECT * FROM {p}schedules WHERE enabled = 1 AND next_run_at <= @now ORDER BY next_run_at, name LIMIT @limit`,
  advance: `-- leasehold schedules.advance: compare-and-set of next_run_at: lands only for the scheduler that read the expected value
    UPDATE {p}schedules SET next_run_at = @nextRunAt, last_run_at = @now,
      last_slot_at = coalesce(@lastSlot, last_slot_at), updated_at = @now
    WHERE name = @name AND enabled = 1 AND next_run_at = @expected`,
  touch: `-- leasehold schedules.touch: mark a run-now
    UPDATE {p}schedules SET last_run_at = @now WHERE name = @name`,
  insertSlotJob: `-- leasehold schedules.insertSlotJob: one job for a slot; the unique (schedule_name, slot_at) index turns a second insert into nothing
    INSERT INTO {p}jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts,
      timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at)
    VALUES (${NEXT_JOB_ID}, @queue, @type, @payload, 'queued', @priority, @now, 0, @maxAttempts, @timeoutMs, @maxRuntimeMs, @now, @now, @name, @slot)
    ON CONFLICT DO NOTHING RETURNING *`,
} as const;

interface SqlSchedule {
  name: string; cron: string | null; every_ms: number | null; timezone: string; type: string; payload: string; queue: string;
  priority: number; max_attempts: number; misfire: MisfirePolicy; misfire_window_ms: number | null; misfire_max: number;
  enabled: number; source: ScheduleSource; next_run_at: number | null; last_run_at: number | null; last_slot_at: number | null;
  created_at: number; updated_at: number;
}

function toScheduleRow(r: SqlSchedule): ScheduleRow {
  return {
    name: r.name, cron: r.cron, everyMs: r.every_ms, timezone: r.timezone, type: r.type, payload: JSON.parse(r.payload) as unknown,
    queue: r.queue, priority: r.priority, maxAttempts: r.max_attempts, misfire: r.misfire, misfireWindowMs: r.misfire_window_ms,
    misfireMax: r.misfire_max, enabled: r.enabled === 1, source: r.source, nextRunAt: dateOrNull(r.next_run_at),
    lastRunAt: dateOrNull(r.last_run_at), lastSlotAt: dateOrNull(r.last_slot_at), createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  };
}

export class SqliteSchedules implements ScheduleStore {
  constructor(private readonly db: SqliteDb) {}

  async upsert(p: { items: readonly ScheduleUpsert[] }): Promise<ScheduleRow[]> {
    const now = this.db.now();
    return this.db.write(() => p.items.map((u) => this.upsertOne(u, now)));
  }

  async sync(p: { items: readonly ScheduleUpsert[] }): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
    const db = this.db;
    const now = db.now();
    return db.write(() => {
      const schedules = p.items.map((u) => this.upsertOne({ ...u, source: 'code' }, now));
      const keep = new Set(p.items.map((i) => i.name));
      const removed = (db.stmt(SCHEDULE_SQL.codeNames).all() as { name: string }[]).map((r) => r.name).filter((n) => !keep.has(n));
      for (const n of removed) db.stmt(SCHEDULE_SQL.remove).run(n);
      return { schedules, removed };
    });
  }

  async get(p: { name: string }): Promise<ScheduleRow | null> {
    const r = this.db.read(() => this.db.stmt(SCHEDULE_SQL.get).get(p.name) as SqlSchedule | undefined);
    return r ? toScheduleRow(r) : null;
  }

  async list(): Promise<ScheduleRow[]> {
    return this.db.read(() => this.db.stmt(SCHEDULE_SQL.list).all() as SqlSchedule[]).map(toScheduleRow);
  }

  async remove(p: { name: string }): Promise<boolean> {
    return this.db.write(() => this.db.stmt(SCHEDULE_SQL.remove).run(p.name).changes > 0);
  }

  async setEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const params = { name: p.name, enabled: p.enabled ? 1 : 0, setNext: p.nextRunAt === undefined ? 0 : 1, nextRunAt: p.nextRunAt?.getTime() ?? null, now: this.db.now() };
    const r = this.db.write(() => this.db.stmt(SCHEDULE_SQL.setEnabled).get(params) as SqlSchedule | undefined);
    return r ? toScheduleRow(r) : null;
  }

  async due(p: { limit: number }): Promise<ScheduleRow[]> {
    const now = this.db.now();
    return this.db.read(() => this.db.stmt(SCHEDULE_SQL.due).all({ now, limit: p.limit }) as SqlSchedule[]).map(toScheduleRow);
  }

  async fire(p: FireScheduleParams): Promise<FireScheduleResult> {
    const db = this.db;
    const now = db.now();
    return db.write((): FireScheduleResult => {
      const lastSlot = p.slots.length ? Math.max(...p.slots.map((d) => d.getTime())) : null;
      const moved = db.stmt(SCHEDULE_SQL.advance).run({ name: p.name, expected: p.expectedNextRunAt.getTime(), nextRunAt: p.nextRunAt?.getTime() ?? null, lastSlot, now }).changes;
      if (moved === 0) return { applied: false, jobIds: [], duplicates: 0 };
      const jobIds: string[] = [];
      let duplicates = 0;
      for (const slot of p.slots) {
        const row = this.insertSlotJob(now, p.name, slot.getTime(), p.job);
        if (row) jobIds.push(String(row.id));
        else duplicates++;
      }
      return { applied: true, jobIds, duplicates };
    });
  }

  async runNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
    const db = this.db;
    const now = db.now();
    const row = db.write(() => {
      if (!db.stmt(SCHEDULE_SQL.get).get(p.name)) return undefined;
      db.stmt(SCHEDULE_SQL.touch).run({ name: p.name, now });
      return this.insertSlotJob(now, p.name, now, p.job);
    });
    return row ? toJobRow(row) : null;
  }

  private upsertOne(u: ScheduleUpsert, now: number): ScheduleRow {
    const row = this.db.stmt(SCHEDULE_SQL.upsert).get({
      name: u.name, cron: u.cron, everyMs: u.everyMs, timezone: u.timezone, type: u.type, payload: jsonOrNull(u.payload) ?? 'null',
      queue: u.queue, priority: u.priority, maxAttempts: u.maxAttempts, misfire: u.misfire, misfireWindowMs: u.misfireWindowMs,
      misfireMax: u.misfireMax, enabled: u.enabled ? 1 : 0, source: u.source, nextRunAt: u.nextRunAt?.getTime() ?? null, now,
    }) as SqlSchedule;
    return toScheduleRow(row);
  }

  /** The job of one slot, or undefined when that slot already has its job. */
  private insertSlotJob(now: number, name: string, slot: number, job: ScheduledJob): SqlJob | undefined {
    return this.db.stmt(SCHEDULE_SQL.insertSlotJob).get({
      queue: job.queue, type: job.type, payload: jsonOrNull(job.payload) ?? 'null', priority: job.priority, maxAttempts: job.maxAttempts,
      timeoutMs: job.timeoutMs, maxRuntimeMs: job.maxRuntimeMs, now, name, slot,
    }) as SqlJob | undefined;
  }
}
