/**
 * Schedules and locks on PostgreSQL: the SQL (a one-line `--` header each) and the functions
 * PostgresStorage delegates to. Semantics: the header of src/core/schedules.ts.
 *
 * fireSchedule: the compare-and-set UPDATE of next_run_at and the slot inserts share one
 * transaction; under READ COMMITTED a second scheduler's UPDATE waits for the first, then
 * re-checks `next_run_at = expected` on the new row version and changes nothing.
 * Locks: a per-name counter row (slot -1) is locked FOR UPDATE first, which serialises
 * acquirers of one name; lock times use clock_timestamp() (not the transaction's start time),
 * so a wait for that row lock never shortens a TTL or revives an expired holding.
 */
import type pg from 'pg';
import type {
  AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, MisfirePolicy, ScheduledJob, ScheduleRow,
  ScheduleSource, ScheduleUpsert,
} from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { JobRow } from '../../core/storage.js';
import { query, transaction } from './postgres-db.js';
import { jsonParam, toJobRow, type Queryable, type Row } from './postgres-rows.js';
import { NOW } from './postgres-sql-jobs.js';

const CLOCK = "date_trunc('milliseconds', clock_timestamp())";

export function schedulesSql(s: string) {
  return {
    upsert: `-- leasehold: insert or change a schedule (enabled and created_at kept; next_run_at kept unless the timing changed)
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
    removeMissing: `-- leasehold: delete code-declared schedules no longer declared
DELETE FROM ${s}.schedules WHERE source = 'code' AND NOT (name = ANY ($1::text[])) RETURNING name`,
    get: `-- leasehold: one schedule by name
SELECT * FROM ${s}.schedules WHERE name = $1`,
    list: `-- leasehold: every schedule by name
SELECT * FROM ${s}.schedules ORDER BY name`,
    remove: `-- leasehold: delete a schedule (its jobs stay)
DELETE FROM ${s}.schedules WHERE name = $1 RETURNING name`,
    setEnabled: `-- leasehold: enable/disable a schedule, optionally replacing next_run_at
UPDATE ${s}.schedules SET enabled = $2, next_run_at = CASE WHEN $3 THEN $4::timestamptz ELSE next_run_at END, updated_at = ${NOW}
WHERE name = $1 RETURNING *`,
    due: `-- leasehold: enabled schedules due now, oldest slot first
SELECT * FROM ${s}.schedules WHERE enabled AND next_run_at <= ${NOW} ORDER BY next_run_at, name LIMIT $1`,
    advance: `-- leasehold: compare-and-set of next_run_at; lands only for the scheduler that read the expected value
UPDATE ${s}.schedules SET next_run_at = $2, last_run_at = ${NOW}, last_slot_at = coalesce($3, last_slot_at), updated_at = ${NOW}
WHERE name = $1 AND enabled AND next_run_at = $4 RETURNING name`,
    insertSlots: `-- leasehold: one job per slot; the unique (schedule_name, slot_at) index skips slots already enqueued
INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, schedule_name, slot_at)
SELECT $1, $2, $3::json, 'queued', $4, ${NOW}, 0, $5, $6, $7, $8, slot FROM unnest($9::timestamptz[]) AS slot
ON CONFLICT (schedule_name, slot_at) WHERE schedule_name IS NOT NULL DO NOTHING
RETURNING *`,
    touch: `-- leasehold: record a run-now on the schedule (only if it exists)
UPDATE ${s}.schedules SET last_run_at = ${NOW} WHERE name = $1 RETURNING ${NOW} AS now`,
    notify: `-- leasehold: wake idle workers (delivered on commit)
SELECT pg_notify($1, $2)`,
    ensureCounter: `-- leasehold: the per-name fence counter row of a lock (slot -1), created on first use
INSERT INTO ${s}.locks (name, slot, fence) VALUES ($1, -1, 0) ON CONFLICT DO NOTHING`,
    lockCounter: `-- leasehold: serialise acquirers of one lock name on its counter row; the slot count it was last granted with
SELECT fence, slots FROM ${s}.locks WHERE name = $1 AND slot = -1 FOR UPDATE`,
    heldSlots: `-- leasehold: slots of a lock name held right now
SELECT slot FROM ${s}.locks WHERE name = $1 AND slot >= 0 AND token IS NOT NULL AND expires_at > ${CLOCK}`,
    take: `-- leasehold: issue the next fence, record the slot count granted, and take a free (or expired) slot with a fresh token
WITH f AS (UPDATE ${s}.locks SET fence = fence + 1, slots = $5 WHERE name = $1 AND slot = -1 RETURNING fence)
INSERT INTO ${s}.locks (name, slot, owner, token, fence, acquired_at, expires_at)
SELECT $1, $2, $3, md5(gen_random_uuid()::text), f.fence, ${CLOCK}, ${CLOCK} + $4::float8 * interval '1 millisecond' FROM f
ON CONFLICT (name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, fence = excluded.fence,
  acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
RETURNING slot, token, fence, expires_at`,
    extend: `-- leasehold: extend a holding that has not expired, by its token
UPDATE ${s}.locks SET expires_at = ${CLOCK} + $3::float8 * interval '1 millisecond'
WHERE name = $1 AND slot >= 0 AND token = $2 AND expires_at > ${CLOCK} RETURNING slot`,
    release: `-- leasehold: release a holding that has not expired, by its token
UPDATE ${s}.locks SET token = NULL, owner = NULL, expires_at = ${CLOCK}
WHERE name = $1 AND slot >= 0 AND token = $2 AND expires_at > ${CLOCK} RETURNING slot`,
    listLocks: `-- leasehold: held (or expired, never released) lock rows by name and slot
SELECT name, slot, owner, fence, acquired_at, expires_at, expires_at <= ${CLOCK} AS expired FROM ${s}.locks
WHERE slot >= 0 AND token IS NOT NULL AND ($1::text IS NULL OR name = $1) ORDER BY name, slot`,
  };
}

type Sql = ReturnType<typeof schedulesSql>;

const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(String(v)));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function toScheduleRow(r: Row): ScheduleRow {
  return {
    name: String(r.name), cron: r.cron == null ? null : String(r.cron), everyMs: numOrNull(r.every_ms), timezone: String(r.timezone),
    type: String(r.type), payload: r.payload, queue: String(r.queue), priority: Number(r.priority), maxAttempts: Number(r.max_attempts),
    misfire: r.misfire as MisfirePolicy, misfireWindowMs: numOrNull(r.misfire_window_ms), misfireMax: Number(r.misfire_max),
    enabled: r.enabled === true, source: r.source as ScheduleSource, nextRunAt: dateOrNull(r.next_run_at), lastRunAt: dateOrNull(r.last_run_at),
    lastSlotAt: dateOrNull(r.last_slot_at), createdAt: dateOrNull(r.created_at) as Date, updatedAt: dateOrNull(r.updated_at) as Date,
  };
}

async function upsertOn(c: Queryable, sql: Sql, u: ScheduleUpsert): Promise<ScheduleRow> {
  const [row] = await query(c, 'upsertSchedules', sql.upsert, [
    u.name, u.cron, u.everyMs, u.timezone, u.type, jsonParam(u.payload), u.queue, u.priority, u.maxAttempts, u.misfire,
    u.misfireWindowMs, u.misfireMax, u.enabled, u.source, u.nextRunAt,
  ]);
  return toScheduleRow(row as Row);
}

export function upsertSchedules(pool: pg.Pool, sql: Sql, items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> {
  return transaction(pool, 'upsertSchedules', async (c) => {
    const out: ScheduleRow[] = [];
    for (const u of items) out.push(await upsertOn(c, sql, u));
    return out;
  });
}

export function syncSchedules(pool: pg.Pool, sql: Sql, items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> {
  return transaction(pool, 'syncSchedules', async (c) => {
    const schedules: ScheduleRow[] = [];
    for (const u of items) schedules.push(await upsertOn(c, sql, { ...u, source: 'code' }));
    const gone = await query(c, 'syncSchedules', sql.removeMissing, [items.map((i) => i.name)]);
    return { schedules, removed: gone.map((r) => String(r.name)).sort() };
  });
}

export function fireSchedule(pool: pg.Pool, sql: Sql, p: FireScheduleParams, notify: [string, string]): Promise<FireScheduleResult> {
  const lastSlot = p.slots.length ? new Date(Math.max(...p.slots.map((d) => d.getTime()))) : null;
  return transaction(pool, 'fireSchedule', async (c): Promise<FireScheduleResult> => {
    const moved = await query(c, 'fireSchedule', sql.advance, [p.name, p.nextRunAt, lastSlot, p.expectedNextRunAt]);
    if (moved.length === 0) return { applied: false, jobIds: [], duplicates: 0 };
    const rows = p.slots.length === 0 ? [] : await insertSlots(c, sql, p.name, p.job, p.slots);
    if (rows.length > 0) await query(c, 'fireSchedule', sql.notify, notify);
    return { applied: true, jobIds: rows.map((r) => String(r.id)), duplicates: p.slots.length - rows.length };
  });
}

function insertSlots(c: Queryable, sql: Sql, name: string, j: ScheduledJob, slots: readonly Date[]): Promise<Row[]> {
  return query(c, 'fireSchedule', sql.insertSlots, [j.queue, j.type, jsonParam(j.payload), j.priority, j.maxAttempts, j.timeoutMs, j.maxRuntimeMs, name, slots]);
}

export function runScheduleNow(pool: pg.Pool, sql: Sql, p: { name: string; job: ScheduledJob }, notify: [string, string]): Promise<JobRow | null> {
  return transaction(pool, 'runScheduleNow', async (c) => {
    const [touched] = await query(c, 'runScheduleNow', sql.touch, [p.name]);
    if (!touched) return null;
    const [row] = await insertSlots(c, sql, p.name, p.job, [touched.now as Date]);
    if (row) await query(c, 'runScheduleNow', sql.notify, notify);
    return row ? toJobRow(row) : null;
  });
}

export async function tryAcquireLock(pool: pg.Pool, sql: Sql, p: AcquireLockParams): Promise<LockGrant | null> {
  await query(pool, 'tryAcquireLock', sql.ensureCounter, [p.name]);
  return transaction(pool, 'tryAcquireLock', async (c) => {
    const [counter] = await query(c, 'tryAcquireLock', sql.lockCounter, [p.name]);
    const held = new Set((await query(c, 'tryAcquireLock', sql.heldSlots, [p.name])).map((r) => Number(r.slot)));
    checkLockSlots(p.name, numOrNull(counter?.slots), p.slots, held.size);
    let slot = 0;
    while (slot < p.slots && held.has(slot)) slot++;
    if (slot >= p.slots) return null;
    const [r] = await query(c, 'tryAcquireLock', sql.take, [p.name, slot, p.owner, p.ttlMs, p.slots]);
    if (!r) return null;
    return { name: p.name, slot, token: String(r.token), fence: Number(r.fence), expiresAt: dateOrNull(r.expires_at) as Date };
  });
}

export function toLockRow(r: Row): LockRow {
  return {
    name: String(r.name), slot: Number(r.slot), owner: r.owner == null ? '' : String(r.owner), fence: Number(r.fence),
    acquiredAt: dateOrNull(r.acquired_at) as Date, expiresAt: dateOrNull(r.expires_at) as Date, expired: r.expired === true,
  };
}
