/**
 * Schedules and locks of the in-memory adapter. Each function does its whole mutation
 * synchronously, so it is atomic like one SQL transaction. Semantics: src/core/schedules.ts.
 */
import type {
  AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert,
} from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { JobRow } from '../../core/storage.js';
import type { MemoryTables, StoredJob } from './memory-state.js';
import { jobOut, newToken, toJson } from './memory-state.js';

type StoredSchedule = MemoryTables['schedules'] extends Map<string, infer V> ? V : never;

const copy = (d: Date | null): Date | null => (d === null ? null : new Date(d.getTime()));

export function scheduleOut(s: StoredSchedule): ScheduleRow {
  const { payloadJson, ...rest } = s;
  return {
    ...rest,
    payload: JSON.parse(payloadJson) as unknown,
    nextRunAt: copy(s.nextRunAt),
    lastRunAt: copy(s.lastRunAt),
    lastSlotAt: copy(s.lastSlotAt),
    createdAt: new Date(s.createdAt.getTime()),
    updatedAt: new Date(s.updatedAt.getTime()),
  };
}

function upsertOne(t: MemoryTables, u: ScheduleUpsert, now: Date): StoredSchedule {
  const old = t.schedules.get(u.name);
  const timingChanged = !old || old.cron !== u.cron || old.everyMs !== u.everyMs || old.timezone !== u.timezone;
  const { payload, ...spec } = u;
  const row: StoredSchedule = {
    ...spec,
    payloadJson: toJson(payload),
    enabled: old ? old.enabled : u.enabled,
    nextRunAt: timingChanged ? copy(u.nextRunAt) : old.nextRunAt,
    lastRunAt: old?.lastRunAt ?? null,
    lastSlotAt: old?.lastSlotAt ?? null,
    createdAt: old?.createdAt ?? now,
    updatedAt: now,
  };
  t.schedules.set(u.name, row);
  return row;
}

export function upsertSchedules(t: MemoryTables, items: readonly ScheduleUpsert[], now: Date): ScheduleRow[] {
  for (const u of items) toJson(u.payload);
  return items.map((u) => scheduleOut(upsertOne(t, u, now)));
}

export function syncSchedules(t: MemoryTables, items: readonly ScheduleUpsert[], now: Date): { schedules: ScheduleRow[]; removed: string[] } {
  const schedules = upsertSchedules(t, items.map((i) => ({ ...i, source: 'code' as const })), now);
  const keep = new Set(items.map((i) => i.name));
  const removed = [...t.schedules.values()].filter((s) => s.source === 'code' && !keep.has(s.name)).map((s) => s.name).sort();
  for (const name of removed) t.schedules.delete(name);
  return { schedules, removed };
}

export function setEnabled(t: MemoryTables, p: { name: string; enabled: boolean; nextRunAt?: Date | null }, now: Date): ScheduleRow | null {
  const s = t.schedules.get(p.name);
  if (!s) return null;
  s.enabled = p.enabled;
  if (p.nextRunAt !== undefined) s.nextRunAt = copy(p.nextRunAt);
  s.updatedAt = now;
  return scheduleOut(s);
}

export function dueSchedules(t: MemoryTables, limit: number, now: Date): ScheduleRow[] {
  return [...t.schedules.values()]
    .filter((s) => s.enabled && s.nextRunAt !== null && s.nextRunAt.getTime() <= now.getTime())
    .sort((a, b) => (a.nextRunAt as Date).getTime() - (b.nextRunAt as Date).getTime() || (a.name < b.name ? -1 : 1))
    .slice(0, Math.max(0, limit))
    .map(scheduleOut);
}

/** Insert one slot job unless its (schedule, slot) key exists; returns the new job or null. */
function insertSlotJob(t: MemoryTables, name: string, slot: Date, job: ScheduledJob, now: Date): StoredJob | null {
  const key = `${name}\0${slot.getTime()}`;
  if (t.slotKeys.has(key)) return null;
  const seq = t.jobSeq();
  const row: StoredJob = {
    id: String(seq), seq, queue: job.queue, type: job.type, payloadJson: toJson(job.payload), status: 'queued',
    priority: job.priority, runAt: now, attempts: 0, maxAttempts: job.maxAttempts, idempotencyKey: null,
    lockedBy: null, leaseToken: null, lockedUntil: null, heartbeatAt: null, startedAt: null, finishedAt: null,
    lastErrorCode: null, lastError: null, timeoutMs: job.timeoutMs, maxRuntimeMs: job.maxRuntimeMs,
    createdAt: now, updatedAt: now, scheduleName: name, slotAt: new Date(slot.getTime()),
  };
  t.jobs.set(row.id, row);
  t.slotKeys.set(key, row.id);
  return row;
}

export function fireSchedule(t: MemoryTables, p: FireScheduleParams, now: Date): FireScheduleResult {
  const s = t.schedules.get(p.name);
  if (!s || !s.enabled || s.nextRunAt === null || s.nextRunAt.getTime() !== p.expectedNextRunAt.getTime()) {
    return { applied: false, jobIds: [], duplicates: 0 };
  }
  toJson(p.job.payload);
  s.nextRunAt = copy(p.nextRunAt);
  s.lastRunAt = now;
  if (p.slots.length > 0) s.lastSlotAt = new Date(Math.max(...p.slots.map((d) => d.getTime())));
  s.updatedAt = now;
  const jobIds: string[] = [];
  let duplicates = 0;
  for (const slot of p.slots) {
    const row = insertSlotJob(t, p.name, slot, p.job, now);
    if (row) jobIds.push(row.id);
    else duplicates++;
  }
  return { applied: true, jobIds, duplicates };
}

export function runScheduleNow(t: MemoryTables, p: { name: string; job: ScheduledJob }, now: Date): JobRow | null {
  const s = t.schedules.get(p.name);
  if (!s) return null;
  const row = insertSlotJob(t, p.name, now, p.job, now);
  if (!row) return null;
  s.lastRunAt = now;
  return jobOut(row);
}

// --- locks ---------------------------------------------------------------------------------

const held = (l: { token: string | null; expiresAt: Date }, now: Date): boolean => l.token !== null && l.expiresAt.getTime() > now.getTime();

export function tryAcquireLock(t: MemoryTables, p: AcquireLockParams, now: Date): LockGrant | null {
  const stored = t.lockSlots.get(p.name) ?? null;
  const heldNow = [...t.locks.values()].filter((l) => l.name === p.name && held(l, now)).length;
  checkLockSlots(p.name, stored, p.slots, heldNow);
  for (let slot = 0; slot < p.slots; slot++) {
    const key = `${p.name}\0${slot}`;
    const cur = t.locks.get(key);
    if (cur && held(cur, now)) continue;
    const fence = (t.lockFences.get(p.name) ?? 0) + 1;
    t.lockFences.set(p.name, fence);
    t.lockSlots.set(p.name, p.slots);
    const token = newToken();
    const expiresAt = new Date(now.getTime() + p.ttlMs);
    t.locks.set(key, { name: p.name, slot, owner: p.owner, token, fence, acquiredAt: now, expiresAt });
    return { name: p.name, slot, token, fence, expiresAt: new Date(expiresAt.getTime()) };
  }
  return null;
}

function holding(t: MemoryTables, name: string, token: string, now: Date) {
  for (const l of t.locks.values()) if (l.name === name && l.token === token && held(l, now)) return l;
  return undefined;
}

export function extendLock(t: MemoryTables, p: { name: string; token: string; ttlMs: number }, now: Date): boolean {
  const l = holding(t, p.name, p.token, now);
  if (!l) return false;
  l.expiresAt = new Date(now.getTime() + p.ttlMs);
  return true;
}

export function releaseLock(t: MemoryTables, p: { name: string; token: string }, now: Date): boolean {
  const l = holding(t, p.name, p.token, now);
  if (!l) return false;
  l.token = null;
  l.expiresAt = now;
  return true;
}

export function listLocks(t: MemoryTables, name: string | undefined, now: Date): LockRow[] {
  return [...t.locks.values()]
    .filter((l) => l.token !== null && (name === undefined || l.name === name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.slot - b.slot))
    .map((l) => ({
      name: l.name, slot: l.slot, owner: l.owner, fence: l.fence, acquiredAt: new Date(l.acquiredAt.getTime()),
      expiresAt: new Date(l.expiresAt.getTime()), expired: l.expiresAt.getTime() <= now.getTime(),
    }));
}
