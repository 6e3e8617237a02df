/**
 * Schedules and locks on SQLite: the SQL (one header line each) and plain functions over a
 * connection and a "now" (the process clock, see sqlite-storage.ts); SqliteStorage delegates.
 * Every write runs in one BEGIN IMMEDIATE transaction, which serialises writers across
 * processes. Semantics: the header of src/core/schedules.ts.
 */
import { randomBytes } from 'node:crypto';
import type {
  AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, MisfirePolicy, ScheduledJob, ScheduleRow,
  ScheduleSource, ScheduleUpsert,
} from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { JobRow } from '../../core/storage.js';
import type { SqliteDb } from './sqlite-db.js';
import { jsonOrNull, toJobRow } from './sqlite-rows.js';
import type { SqlJob } from './sqlite-rows.js';
import { NEXT_JOB_ID } from './sqlite-sql.js';

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

const LOCK_SQL = {
  ensureCounter: `-- leasehold locks.ensureCounter: the per-name fence counter row (slot -1), created on first use
    INSERT INTO {p}locks (name, slot, fence) VALUES (@name, -1, 0) ON CONFLICT DO NOTHING`,
  storedSlots: `-- leasehold locks.storedSlots: the slot count a name was last granted with (NULL: none yet)
    SELECT slots FROM {p}locks WHERE name = @name AND slot = -1`,
  heldSlots: `-- leasehold locks.heldSlots: slots of a name held right now
    SELECT slot FROM {p}locks WHERE name = @name AND slot >= 0 AND token IS NOT NULL AND expires_at > @now`,
  bumpFence: `-- leasehold locks.bumpFence: issue the next fencing token of a name and record the slot count granted
    UPDATE {p}locks SET fence = fence + 1, slots = @slots WHERE name = @name AND slot = -1 RETURNING fence`,
  take: `-- leasehold locks.take: take a free (or expired) slot
    INSERT INTO {p}locks (name, slot, owner, token, fence, acquired_at, expires_at)
    VALUES (@name, @slot, @owner, @token, @fence, @now, @expiresAt)
    ON CONFLICT (name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, fence = excluded.fence,
      acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
  extend: `-- leasehold locks.extend: extend a holding that has not expired, by its token
    UPDATE {p}locks SET expires_at = @now + @ttlMs
    WHERE name = @name AND slot >= 0 AND token = @token AND expires_at > @now`,
  release: `-- leasehold locks.release: release a holding that has not expired, by its token
    UPDATE {p}locks SET token = NULL, owner = NULL, expires_at = @now
    WHERE name = @name AND slot >= 0 AND token = @token AND expires_at > @now`,
  listAll: `-- leasehold locks.listAll: held (or expired, never released) rows, by name and slot
    SELECT * FROM {p}locks WHERE slot >= 0 AND token IS NOT NULL ORDER BY name, slot`,
  listByName: `-- leasehold locks.listByName: the same for one name
    SELECT * FROM {p}locks WHERE name = @name AND slot >= 0 AND token IS NOT NULL ORDER BY slot`,
} as const;

interface SqlSchedule {
  name: string; cron: string | null; every_ms: number | null; timezone: string; type: string; payload: string; queue: string;
  priority: number; max_attempts: number; misfire: MisfirePolicy; misfire_window_ms: number | null; misfire_max: number;
  enabled: number; source: ScheduleSource; next_run_at: number | null; last_run_at: number | null; last_slot_at: number | null;
  created_at: number; updated_at: number;
}

interface SqlLock { name: string; slot: number; owner: string | null; fence: number; acquired_at: number; expires_at: number }

const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

function toScheduleRow(r: SqlSchedule): ScheduleRow {
  return {
    name: r.name, cron: r.cron, everyMs: r.every_ms, timezone: r.timezone, type: r.type, payload: JSON.parse(r.payload) as unknown,
    queue: r.queue, priority: r.priority, maxAttempts: r.max_attempts, misfire: r.misfire, misfireWindowMs: r.misfire_window_ms,
    misfireMax: r.misfire_max, enabled: r.enabled === 1, source: r.source, nextRunAt: dateOrNull(r.next_run_at),
    lastRunAt: dateOrNull(r.last_run_at), lastSlotAt: dateOrNull(r.last_slot_at), createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  };
}

function upsertOne(c: SqliteDb, u: ScheduleUpsert, now: number): ScheduleRow {
  const row = c.stmt(SCHEDULE_SQL.upsert).get({
    name: u.name, cron: u.cron, everyMs: u.everyMs, timezone: u.timezone, type: u.type, payload: jsonOrNull(u.payload) ?? 'null',
    queue: u.queue, priority: u.priority, maxAttempts: u.maxAttempts, misfire: u.misfire, misfireWindowMs: u.misfireWindowMs,
    misfireMax: u.misfireMax, enabled: u.enabled ? 1 : 0, source: u.source, nextRunAt: u.nextRunAt?.getTime() ?? null, now,
  }) as SqlSchedule;
  return toScheduleRow(row);
}

export function upsertSchedules(c: SqliteDb, now: number, items: readonly ScheduleUpsert[]): ScheduleRow[] {
  return c.write(() => items.map((u) => upsertOne(c, u, now)));
}

export function syncSchedules(c: SqliteDb, now: number, items: readonly ScheduleUpsert[]): { schedules: ScheduleRow[]; removed: string[] } {
  return c.write(() => {
    const schedules = items.map((u) => upsertOne(c, { ...u, source: 'code' }, now));
    const keep = new Set(items.map((i) => i.name));
    const removed = (c.stmt(SCHEDULE_SQL.codeNames).all() as { name: string }[]).map((r) => r.name).filter((n) => !keep.has(n));
    for (const n of removed) c.stmt(SCHEDULE_SQL.remove).run(n);
    return { schedules, removed };
  });
}

export function getSchedule(c: SqliteDb, name: string): ScheduleRow | null {
  const r = c.read(() => c.stmt(SCHEDULE_SQL.get).get(name) as SqlSchedule | undefined);
  return r ? toScheduleRow(r) : null;
}

export function listSchedules(c: SqliteDb): ScheduleRow[] {
  return c.read(() => c.stmt(SCHEDULE_SQL.list).all() as SqlSchedule[]).map(toScheduleRow);
}

export function removeSchedule(c: SqliteDb, name: string): boolean {
  return c.write(() => c.stmt(SCHEDULE_SQL.remove).run(name).changes > 0);
}

export function setScheduleEnabled(c: SqliteDb, now: number, p: { name: string; enabled: boolean; nextRunAt?: Date | null }): ScheduleRow | null {
  const r = c.write(() => c.stmt(SCHEDULE_SQL.setEnabled).get({
    name: p.name, enabled: p.enabled ? 1 : 0, setNext: p.nextRunAt === undefined ? 0 : 1, nextRunAt: p.nextRunAt?.getTime() ?? null, now,
  }) as SqlSchedule | undefined);
  return r ? toScheduleRow(r) : null;
}

export function dueSchedules(c: SqliteDb, now: number, limit: number): ScheduleRow[] {
  return c.read(() => c.stmt(SCHEDULE_SQL.due).all({ now, limit }) as SqlSchedule[]).map(toScheduleRow);
}

function insertSlotJob(c: SqliteDb, now: number, name: string, slot: number, job: ScheduledJob): SqlJob | undefined {
  return c.stmt(SCHEDULE_SQL.insertSlotJob).get({
    queue: job.queue, type: job.type, payload: jsonOrNull(job.payload) ?? 'null', priority: job.priority, maxAttempts: job.maxAttempts,
    timeoutMs: job.timeoutMs, maxRuntimeMs: job.maxRuntimeMs, now, name, slot,
  }) as SqlJob | undefined;
}

export function fireSchedule(c: SqliteDb, now: number, p: FireScheduleParams): FireScheduleResult {
  return c.write((): FireScheduleResult => {
    const lastSlot = p.slots.length ? Math.max(...p.slots.map((d) => d.getTime())) : null;
    const moved = c.stmt(SCHEDULE_SQL.advance).run({ name: p.name, expected: p.expectedNextRunAt.getTime(), nextRunAt: p.nextRunAt?.getTime() ?? null, lastSlot, now }).changes;
    if (moved === 0) return { applied: false, jobIds: [], duplicates: 0 };
    const jobIds: string[] = [];
    let duplicates = 0;
    for (const slot of p.slots) {
      const row = insertSlotJob(c, now, p.name, slot.getTime(), p.job);
      if (row) jobIds.push(String(row.id));
      else duplicates++;
    }
    return { applied: true, jobIds, duplicates };
  });
}

export function runScheduleNow(c: SqliteDb, now: number, p: { name: string; job: ScheduledJob }): JobRow | null {
  const row = c.write(() => {
    if (!c.stmt(SCHEDULE_SQL.get).get(p.name)) return undefined;
    c.stmt(SCHEDULE_SQL.touch).run({ name: p.name, now });
    return insertSlotJob(c, now, p.name, now, p.job);
  });
  return row ? toJobRow(row) : null;
}

// --- locks ---------------------------------------------------------------------------------

export function tryAcquireLock(c: SqliteDb, now: number, p: AcquireLockParams): LockGrant | null {
  return c.write((): LockGrant | null => {
    c.stmt(LOCK_SQL.ensureCounter).run({ name: p.name });
    const held = new Set((c.stmt(LOCK_SQL.heldSlots).all({ name: p.name, now }) as { slot: number }[]).map((r) => r.slot));
    const stored = (c.stmt(LOCK_SQL.storedSlots).get({ name: p.name }) as { slots: number | null } | undefined)?.slots ?? null;
    checkLockSlots(p.name, stored, p.slots, held.size);
    let slot = 0;
    while (slot < p.slots && held.has(slot)) slot++;
    if (slot >= p.slots) return null;
    const { fence } = c.stmt(LOCK_SQL.bumpFence).get({ name: p.name, slots: p.slots }) as { fence: number };
    const token = randomBytes(16).toString('hex');
    const expiresAt = now + p.ttlMs;
    c.stmt(LOCK_SQL.take).run({ name: p.name, slot, owner: p.owner, token, fence, now, expiresAt });
    return { name: p.name, slot, token, fence, expiresAt: new Date(expiresAt) };
  });
}

export function extendLock(c: SqliteDb, now: number, p: { name: string; token: string; ttlMs: number }): boolean {
  return c.write(() => c.stmt(LOCK_SQL.extend).run({ name: p.name, token: p.token, ttlMs: p.ttlMs, now }).changes > 0);
}

export function releaseLock(c: SqliteDb, now: number, p: { name: string; token: string }): boolean {
  return c.write(() => c.stmt(LOCK_SQL.release).run({ name: p.name, token: p.token, now }).changes > 0);
}

export function listLocks(c: SqliteDb, now: number, name: string | undefined): LockRow[] {
  const rows = c.read(() => (name === undefined ? c.stmt(LOCK_SQL.listAll).all() : c.stmt(LOCK_SQL.listByName).all({ name })) as SqlLock[]);
  return rows.map((r) => ({
    name: r.name, slot: r.slot, owner: r.owner ?? '', fence: r.fence, acquiredAt: new Date(r.acquired_at),
    expiresAt: new Date(r.expires_at), expired: r.expires_at <= now,
  }));
}
