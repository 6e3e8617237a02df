/**
 * Cron parsing and matching by croner; a schedule's timing becomes a `NextAfter` function for the
 * pure slot math in src/core/slots.ts: the first slot strictly after ANY instant, never skipping one.
 *
 * Time zones and DST. croner matches the expression against wall-clock times (it runs in UTC, so
 * it sees no DST), and each matching wall time is read as an instant in the schedule's IANA zone
 * by wall-clock.ts, by one rule in every zone (RFC 5545 §3.3.5; Temporal's 'compatible'):
 * - a time that happens twice (01:30 on a fall-back day) fires ONCE, at its FIRST occurrence;
 *   nothing fires in the repeated hour's second pass;
 * - a time skipped by spring-forward (02:30 in a 02:00→03:00 gap) fires ONCE, shifted forward
 *   by the gap (03:30); where that lands on a slot of its own (02:00 → 03:00), they fire once.
 */
import { Cron } from 'croner';
import type { NextAfter, ScheduleInput, ScheduleSpec } from '../core/index.js';
import { ValidationError, intervalNextAfter, normalizeScheduleSpec } from '../core/index.js';
import { nextInZone } from './wall-clock.js';

type Timing = Pick<ScheduleSpec, 'name' | 'cron' | 'everyMs' | 'timezone'>;

function invalid(message: string, cause?: unknown): never {
  throw new ValidationError('INVALID_SCHEDULE', message, cause === undefined ? undefined : { cause });
}

/** Throws ValidationError('INVALID_SCHEDULE') for a zone the runtime's ICU does not know. */
export function checkTimeZone(name: string, timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch (e) {
    invalid(`schedule ${name}: unknown time zone "${timezone}" (use an IANA name like Europe/Warsaw or UTC)`, e);
  }
}

function parseCron(t: Timing & { cron: string }): Cron {
  const fields = t.cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) invalid(`schedule ${t.name}: cron "${t.cron}" must have 5 fields (minute hour day month weekday) or 6 (seconds first)`);
  try {
    // matched against wall-clock times: UTC has no DST, the zone is applied by wall-clock.ts
    return new Cron(t.cron, { timezone: 'Etc/UTC', paused: true });
  } catch (e) {
    return invalid(`schedule ${t.name}: invalid cron "${t.cron}": ${(e as Error).message}`, e);
  }
}

/** The first slot strictly after a time, for a schedule's cron (in its zone) or interval. */
export function nextAfterFor(t: Timing): NextAfter {
  if (t.everyMs !== null) return intervalNextAfter(t.everyMs);
  if (t.cron === null) return invalid(`schedule ${t.name}: give exactly one of cron and every`);
  checkTimeZone(t.name, t.timezone);
  const cron = parseCron({ ...t, cron: t.cron });
  const zone = t.timezone;
  const nextWall = (w: number) => cron.nextRun(new Date(w))?.getTime() ?? null;
  return (at) => {
    const next = nextInZone(zone, at.getTime(), nextWall);
    return next === null ? null : new Date(next);
  };
}

/**
 * Validate a declaration completely — names, payload, misfire, and cron/zone/interval by croner —
 * and fill in defaults. Throws ValidationError before anything is written.
 */
export function validateSchedule(input: ScheduleInput, maxPayloadBytes?: number): ScheduleSpec {
  const spec = normalizeScheduleSpec(input, maxPayloadBytes);
  if (spec.everyMs === null) checkTimeZone(spec.name, spec.timezone);
  const next = nextAfterFor(spec);
  if (spec.cron !== null && next(new Date()) === null) invalid(`schedule ${spec.name}: cron "${spec.cron}" never fires again`);
  return spec;
}

/** The schedule's period around `at` (gap between two consecutive slots), for the default grace. */
export function periodAround(next: NextAfter, at: Date): number {
  const a = next(at);
  const b = a ? next(a) : null;
  return a && b ? b.getTime() - a.getTime() : 60_000;
}
