/**
 * Recurring schedules in memory: upsert and sync by name, due, the fire CAS with one job per
 * slot under a unique (schedule, slot) key, and run-now. Semantics: src/core/schedules.ts.
 */
import type { FireScheduleParams, FireScheduleResult, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';
import type { JobRow, ScheduleStore } from '../../core/storage.js';
import { copyDate, copyDateOrNull, jobOut, slotKey, toJson, type MemoryDb, type StoredJob, type StoredSchedule } from './db.js';

function scheduleOut(s: StoredSchedule): ScheduleRow {
  const { payloadJson, ...rest } = s;
  return {
    ...rest,
    payload: JSON.parse(payloadJson) as unknown,
    nextRunAt: copyDateOrNull(s.nextRunAt),
    lastRunAt: copyDateOrNull(s.lastRunAt),
    lastSlotAt: copyDateOrNull(s.lastSlotAt),
    createdAt: copyDate(s.createdAt),
    updatedAt: copyDate(s.updatedAt),
  };
}

export class MemorySchedules implements ScheduleStore {
  constructor(private readonly db: MemoryDb) {}

  async upsert(p: { items: readonly ScheduleUpsert[] }): Promise<ScheduleRow[]> {
    return this.upsertAll(p.items, this.db.now());
  }

  /** Upsert with source 'code', then delete the code-declared schedules not given. */
  async sync(p: { items: readonly ScheduleUpsert[] }): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
    const now = this.db.now();
    const schedules = this.upsertAll(p.items.map((i) => ({ ...i, source: 'code' as const })), now);
    const keep = new Set(p.items.map((i) => i.name));
    const removed = [...this.db.schedules.values()].filter((s) => s.source === 'code' && !keep.has(s.name)).map((s) => s.name).sort();
    for (const name of removed) this.db.schedules.delete(name);
    return { schedules, removed };
  }

  async get(p: { name: string }): Promise<ScheduleRow | null> {
    this.db.now();
    const s = this.db.schedules.get(p.name);
    return s ? scheduleOut(s) : null;
  }

  /** By name. */
  async list(): Promise<ScheduleRow[]> {
    this.db.now();
    return [...this.db.schedules.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map(scheduleOut);
  }

  /** Its jobs stay. */
  async remove(p: { name: string }): Promise<boolean> {
    this.db.now();
    return this.db.schedules.delete(p.name);
  }

  async setEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const now = this.db.now();
    const s = this.db.schedules.get(p.name);
    if (!s) return null;
    s.enabled = p.enabled;
    if (p.nextRunAt !== undefined) s.nextRunAt = copyDateOrNull(p.nextRunAt);
    s.updatedAt = now;
    return scheduleOut(s);
  }

  /** Enabled with next_run_at <= now, oldest next_run_at first. */
  async due(p: { limit: number }): Promise<ScheduleRow[]> {
    const nowMs = this.db.now().getTime();
    return [...this.db.schedules.values()]
      .filter((s) => s.enabled && s.nextRunAt !== null && s.nextRunAt.getTime() <= nowMs)
      .sort((a, b) => (a.nextRunAt as Date).getTime() - (b.nextRunAt as Date).getTime() || (a.name < b.name ? -1 : 1))
      .slice(0, Math.max(0, p.limit))
      .map(scheduleOut);
  }

  /** CAS on next_run_at; when it lands, one job per slot not enqueued before. */
  async fire(p: FireScheduleParams): Promise<FireScheduleResult> {
    const now = this.db.now();
    const s = this.db.schedules.get(p.name);
    if (!s || !s.enabled || s.nextRunAt === null || s.nextRunAt.getTime() !== p.expectedNextRunAt.getTime()) {
      return { applied: false, jobIds: [], duplicates: 0 };
    }
    const payloadJson = toJson(p.job.payload);
    s.nextRunAt = copyDateOrNull(p.nextRunAt);
    s.lastRunAt = now;
    if (p.slots.length > 0) s.lastSlotAt = new Date(Math.max(...p.slots.map((d) => d.getTime())));
    s.updatedAt = now;
    const jobIds: string[] = [];
    let duplicates = 0;
    for (const slot of p.slots) {
      const row = this.insertSlotJob(p.name, slot, p.job, payloadJson, now);
      if (row) jobIds.push(row.id);
      else duplicates++;
    }
    return { applied: true, jobIds, duplicates };
  }

  /** One job now (slot_at = now), next_run_at untouched. */
  async runNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> {
    const now = this.db.now();
    const s = this.db.schedules.get(p.name);
    if (!s) return null;
    const row = this.insertSlotJob(p.name, now, p.job, toJson(p.job.payload), now);
    if (!row) return null;
    s.lastRunAt = now;
    return jobOut(row);
  }

  private upsertAll(items: readonly ScheduleUpsert[], now: Date): ScheduleRow[] {
    // serialise every payload first so a bad one leaves nothing half-written
    const payloads = items.map((u) => toJson(u.payload));
    return items.map((u, i) => scheduleOut(this.upsertOne(u, payloads[i] as string, now)));
  }

  /** Every field but `enabled` and created_at; next_run_at only on insert or a timing change. */
  private upsertOne(u: ScheduleUpsert, payloadJson: string, now: Date): StoredSchedule {
    const old = this.db.schedules.get(u.name);
    const timingChanged = !old || old.cron !== u.cron || old.everyMs !== u.everyMs || old.timezone !== u.timezone;
    const { payload: _payload, ...spec } = u;
    const row: StoredSchedule = {
      ...spec,
      payloadJson,
      enabled: old ? old.enabled : u.enabled,
      nextRunAt: timingChanged ? copyDateOrNull(u.nextRunAt) : old.nextRunAt,
      lastRunAt: old?.lastRunAt ?? null,
      lastSlotAt: old?.lastSlotAt ?? null,
      createdAt: old?.createdAt ?? now,
      updatedAt: now,
    };
    this.db.schedules.set(u.name, row);
    return row;
  }

  /** Insert one slot job unless its (schedule, slot) key exists; returns the new job or null. */
  private insertSlotJob(name: string, slot: Date, job: ScheduledJob, payloadJson: string, now: Date): StoredJob | null {
    const key = slotKey(name, slot);
    if (this.db.slotKeys.has(key)) return null;
    const row = this.db.insertJob(
      {
        queue: job.queue,
        type: job.type,
        payloadJson,
        priority: job.priority,
        runAt: now,
        maxAttempts: job.maxAttempts,
        idempotencyKey: null,
        timeoutMs: job.timeoutMs,
        maxRuntimeMs: job.maxRuntimeMs,
        scheduleName: name,
        slotAt: copyDate(slot),
      },
      now,
    );
    this.db.slotKeys.set(key, row.id);
    return row;
  }
}
