/**
 * Recurring schedules and distributed locks: the shapes the Storage contract speaks in, and the
 * checks on them that need no cron library. Pure: cron parsing and time-zone math live in
 * src/runtime/cron.ts (croner); the slot arithmetic that decides what a tick fires is in
 * ./slots.ts and takes a "next fire time" function, so it runs under a fake clock.
 *
 * Storage semantics every adapter must meet (test/conformance/schedules.ts and locks.ts pin them):
 * - schedules.upsert inserts new names with every field, and for an
 *   existing name rewrites every field except `enabled` (an operator's enable/disable survives
 *   restarts) and `created_at`; next_run_at is the given value on insert and when cron, everyMs
 *   or timezone changed, otherwise kept. schedules.sync does the same upserts with source 'code'
 *   AND, in the same transaction, deletes every schedule with source 'code' whose name is not
 *   given; returns the removed names. schedules.due: enabled AND next_run_at <= now, oldest first.
 * - schedules.fire, ONE transaction: UPDATE schedules SET next_run_at = nextRunAt, last_run_at = now,
 *   last_slot_at = max(slots) WHERE name AND enabled AND next_run_at = expectedNextRunAt (CAS);
 *   zero rows → applied=false and nothing else is written. Otherwise one job per slot is inserted
 *   (status 'queued', run_at = now, schedule_name = name, slot_at = slot); a slot whose
 *   (schedule_name, slot_at) unique key already exists is counted in `duplicates`, not inserted.
 *   schedules.runNow inserts one such job with slot_at = now, next_run_at untouched; null if no
 *   such schedule.
 * - Locks: rows (name, slot) for slot 0..slots-1 plus a per-name counter. locks.acquire, one
 *   transaction serialised per name: the lowest slot that is free (never held, released, or
 *   expires_at <= now) is taken with a fresh random token, fence = counter + 1 (the counter
 *   never goes down), acquired_at = now, expires_at = now + ttlMs; none free → null, nothing
 *   written. The counter row keeps the slot count of the last grant: first, in the same
 *   transaction, checkLockSlots(stored count, asked count, slots held now) — it throws (nothing
 *   written) for another count while any slot is held; a grant stores its count. locks.extend: expires_at = now + ttlMs WHERE name AND token AND expires_at > now.
 *   locks.release: clears the holding WHERE name AND token AND expires_at > now. Both return
 *   whether a row changed: a stale token (expired, released or taken over) gets false.
 *   locks.list: held rows (token set), expired ones flagged, by name then slot.
 */
import { ValidationError } from './errors.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, validateName, validatePayload } from './job-input.js';
import { MAX_DELAY_MS, validateKeyText } from './limits.js';

/**
 * What happens to slots that passed while no scheduler ran (downtime, a long deploy):
 * - `skip`: none of them; only a slot still within its grace period runs; next_run_at moves to
 *   the next future slot;
 * - `latest`: one job, for the most recent missed slot;
 * - `all`: every missed slot no older than `misfireWindowMs` (null: no age limit), at most
 *   `misfireMax` of them (the most recent ones).
 */
export const MISFIRE_POLICIES = ['skip', 'latest', 'all'] as const;
/** One of {@link MISFIRE_POLICIES}: `skip`, `latest` or `all`. */
export type MisfirePolicy = (typeof MISFIRE_POLICIES)[number];

/** A misfire policy with its limits. */
export interface Misfire {
  /** what to do with missed slots */
  policy: MisfirePolicy;
  /** `all` only: oldest missed slot still enqueued, as an age from now; null = any age */
  windowMs: number | null;
  /** `all` only: at most this many slots per catch-up (>= 1) */
  max: number;
}

export const DEFAULT_MISFIRE: Misfire = { policy: 'skip', windowMs: null, max: 100 };

/** Where a schedule was declared: in code (synced on start, removed when dropped) or by an operator. */
export type ScheduleSource = 'code' | 'cli';

/** A schedule as a user declares it. Exactly one of `cron` and `everyMs` is set. */
export interface ScheduleSpec {
  /** unique; same character rules as a job type */
  name: string;
  /** 5 fields (minute…weekday) or 6 (second first), evaluated in `timezone` */
  cron: string | null;
  /** fixed interval in ms; slots are multiples of it since the Unix epoch (every 10m = :00, :10, …) */
  everyMs: number | null;
  /** IANA zone for `cron` (default 'UTC'); checked for an interval schedule too */
  timezone: string;
  /** the job each slot enqueues */
  type: string;
  /** the payload of each job (default `{}`) */
  payload: unknown;
  /** the jobs' queue (default 'default') */
  queue: string;
  /** the jobs' priority, lower first (default 0) */
  priority: number;
  /** the jobs' attempts before dead (default 5) */
  maxAttempts: number;
  /** what happens to slots missed while no scheduler ran (default `skip`) */
  misfire: MisfirePolicy;
  /** `all` only: the oldest missed slot still enqueued, in ms (null: any age) */
  misfireWindowMs: number | null;
  /** `all` only: at most this many missed slots per catch-up (default 100) */
  misfireMax: number;
  /** a disabled schedule fires nothing (and is not due) */
  enabled: boolean;
}

export interface ScheduleRow extends ScheduleSpec {
  /** declared in code or by an operator */
  source: ScheduleSource;
  /** the earliest slot not yet fired; null when the cron has no future slot */
  nextRunAt: Date | null;
  /** database time of the last fire (or run-now) */
  lastRunAt: Date | null;
  /** the newest slot time enqueued so far */
  lastSlotAt: Date | null;
  /** when it was added */
  createdAt: Date;
  /** when it last changed */
  updatedAt: Date;
}

/** One schedule to insert or change, with the first slot the runtime computed from db now. */
export interface ScheduleUpsert extends ScheduleSpec {
  /** declared in code or by an operator */
  source: ScheduleSource;
  /** used on insert, and when the timing (cron, everyMs, timezone) changed; else kept */
  nextRunAt: Date | null;
}

/** The job a slot enqueues, as the runtime built it from the schedule and the job type's defaults. */
export interface ScheduledJob {
  /** its queue */
  queue: string;
  /** its job type */
  type: string;
  /** its payload */
  payload: unknown;
  /** its priority, lower first */
  priority: number;
  /** attempts before dead */
  maxAttempts: number;
  /** inactivity timeout per attempt, in ms */
  timeoutMs: number;
  /** hard bound on one attempt, in ms */
  maxRuntimeMs: number;
}

/** One fire of a schedule (`schedules.fire`). */
export interface FireScheduleParams {
  /** the schedule */
  name: string;
  /** compare-and-set: lands only WHERE next_run_at = this (and the schedule is enabled) */
  expectedNextRunAt: Date;
  /** the new next_run_at, computed from the last slot (null: no future slot) */
  nextRunAt: Date | null;
  /** slot times to enqueue, ascending; may be empty (skip policy): then only next_run_at moves */
  slots: readonly Date[];
  /** the job each slot enqueues */
  job: ScheduledJob;
}

/** What a fire did. */
export interface FireScheduleResult {
  /** false: another scheduler advanced next_run_at first (or the schedule is gone/disabled); nothing written */
  applied: boolean;
  /** the jobs inserted, one per slot, `scheduleName` and `slotAt` set */
  jobIds: string[];
  /** slots whose (schedule, slot) key already had a job: not inserted again */
  duplicates: number;
}

// --- locks ---------------------------------------------------------------------------------

/** One try at a lock (`locks.acquire`). */
export interface AcquireLockParams {
  /** the lock's name */
  name: string;
  /** who holds it, for people (`locks list`) */
  owner: string;
  /** how long the holding lasts without an extend, in ms */
  ttlMs: number;
  /** semaphore size: at most this many holders at once (1 = a mutex); every caller of a name passes the same */
  slots: number;
}

/** One holding of a lock, as the storage granted it. */
export interface LockGrant {
  /** the lock's name */
  name: string;
  /** which of its slots (0 for a mutex) */
  slot: number;
  /** secret of this holding: extend and release must present it */
  token: string;
  /** fencing token: strictly greater than every fence issued before for this name */
  fence: number;
  /** when it lapses unless extended */
  expiresAt: Date;
}

/** A lock holding, as `locks.list` shows it. */
export interface LockRow {
  /** the lock's name */
  name: string;
  /** which of its slots */
  slot: number;
  /** who holds it */
  owner: string;
  /** the holding's fencing token */
  fence: number;
  /** when it was taken */
  acquiredAt: Date;
  /** when it lapses unless extended */
  expiresAt: Date;
  /** past its TTL: free for the next acquirer, even though nobody released it */
  expired: boolean;
}

// --- validation --------------------------------------------------------------------------------

function invalid(message: string): never {
  throw new ValidationError('INVALID_SCHEDULE', message);
}

/** Largest interval accepted (about 10 years) and smallest (1 s). */
export const MAX_INTERVAL_MS = 10 * 366 * 86_400_000;
export const MIN_INTERVAL_MS = 1_000;

/** A schedule as declared: a name, a job type, one of `cron` and `everyMs`; the rest defaults. */
export type ScheduleInput = Partial<Omit<ScheduleSpec, 'name' | 'type'>> & {
  /** unique; same character rules as a job type */
  name: string;
  /** the job each slot enqueues */
  type: string;
};

/** A zone the runtime's time-zone data knows (Intl is part of the language: no I/O). */
function knownTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Check and complete a schedule declaration (defaults filled in). The cron expression is only
 * checked for shape here; src/runtime/cron.ts parses it with croner.
 */
export function normalizeScheduleSpec(input: ScheduleInput, maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES): ScheduleSpec {
  validateName('schedule name', input.name);
  validateName('job type', input.type);
  const cron = input.cron ?? null;
  const everyMs = input.everyMs ?? null;
  if ((cron === null) === (everyMs === null)) invalid(`schedule ${input.name}: give exactly one of cron and every`);
  if (cron !== null && (typeof cron !== 'string' || cron.trim() === '' || cron.length > 200)) invalid(`schedule ${input.name}: cron must be a non-empty expression`);
  if (everyMs !== null && (typeof everyMs !== 'number' || !Number.isInteger(everyMs) || everyMs < MIN_INTERVAL_MS || everyMs > MAX_INTERVAL_MS)) {
    invalid(`schedule ${input.name}: every must be a whole number of ms from ${MIN_INTERVAL_MS} (1 s) to ${MAX_INTERVAL_MS}; got ${String(everyMs)}`);
  }
  const timezone = input.timezone ?? 'UTC';
  if (typeof timezone !== 'string' || !/^[A-Za-z0-9_+\-/]{1,64}$/.test(timezone) || !knownTimeZone(timezone)) {
    invalid(`schedule ${input.name}: unknown time zone ${JSON.stringify(timezone)} (use an IANA name like Europe/Warsaw or UTC)`);
  }
  validatePayload(input.payload ?? {}, maxPayloadBytes);
  const misfire = input.misfire ?? DEFAULT_MISFIRE.policy;
  if (!MISFIRE_POLICIES.includes(misfire)) invalid(`schedule ${input.name}: misfire must be one of ${MISFIRE_POLICIES.join(', ')}; got ${String(misfire)}`);
  const windowMs = input.misfireWindowMs ?? null;
  if (windowMs !== null && (!Number.isInteger(windowMs) || windowMs <= 0 || windowMs > MAX_DELAY_MS)) invalid(`schedule ${input.name}: misfire window must be a positive number of ms, at most 100 years`);
  const max = input.misfireMax ?? DEFAULT_MISFIRE.max;
  if (!Number.isInteger(max) || max < 1 || max > 10_000) invalid(`schedule ${input.name}: misfire max must be an integer from 1 to 10000`);
  const priority = input.priority ?? 0;
  if (!Number.isInteger(priority) || priority < -32768 || priority > 32767) invalid(`schedule ${input.name}: priority must be an integer from -32768 to 32767`);
  const maxAttempts = input.maxAttempts ?? 5;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000) invalid(`schedule ${input.name}: maxAttempts must be an integer >= 1`);
  return {
    name: input.name,
    cron: cron === null ? null : cron.trim(),
    everyMs,
    timezone,
    type: input.type,
    payload: input.payload ?? {},
    queue: validateName('queue', input.queue ?? 'default'),
    priority,
    maxAttempts,
    misfire,
    misfireWindowMs: windowMs,
    misfireMax: max,
    enabled: input.enabled ?? true,
  };
}

/** Lock parameters: a valid name, a positive TTL, 1..1000 slots, an owner of 1-255 characters. */
export function validateLockParams(p: { name: string; ttlMs: number; slots?: number; owner?: string }): void {
  validateName('lock name', p.name);
  if (p.owner !== undefined) validateKeyText(`lock ${p.name}: owner`, p.owner, 255);
  if (!Number.isInteger(p.ttlMs) || p.ttlMs < 1 || p.ttlMs > MAX_INTERVAL_MS) throw new ValidationError('INVALID_OPTION', `lock ${p.name}: ttlMs must be a positive integer; got ${String(p.ttlMs)}`);
  const slots = p.slots ?? 1;
  if (!Number.isInteger(slots) || slots < 1 || slots > 1000) throw new ValidationError('INVALID_OPTION', `lock ${p.name}: slots must be an integer from 1 to 1000; got ${String(slots)}`);
}

/**
 * A semaphore keeps the slot count it was taken with while anyone holds it: a caller asking for
 * another count is refused, else it would be one holder too many. With no holder left, the new
 * count is adopted (a deploy that changes `globalConcurrency`). `stored` is null before the first
 * acquire of the name records one.
 */
export function checkLockSlots(name: string, stored: number | null, asked: number, heldNow: number): void {
  if (stored !== null && stored !== asked && heldNow > 0) {
    throw new ValidationError('INVALID_OPTION', `lock ${name} is held as a semaphore of ${stored} slot(s); asked with slots: ${asked} (every caller of a name passes the same slots)`);
  }
}
