/**
 * The supported range of what a user hands to leasehold, one for every database: times, delays,
 * text stored as an identity (keys, owners), payload nesting. Anything outside is refused with a
 * `ValidationError` before storage is called, so no adapter ever holds a row another cannot read.
 *
 * - Times: 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z. MySQL's DATETIME ends at 9999;
 *   earlier than the epoch would be negative epoch milliseconds in SQLite and is never a useful
 *   time to run a job.
 * - Delays (a job's delay, a snooze, a retry delay, a lease or TTL): at most 100 years, so "the
 *   database's now + delay" stays in that range, and in microseconds (MySQL) below 2^53.
 * - Identity text: NUL is refused by PostgreSQL and kept by the others; a lone surrogate becomes
 *   U+FFFD on the way in, so two keys would collide. Both are refused everywhere.
 * - Payload nesting: at most 64 arrays/objects deep, so no walker or JSON.stringify overflows
 *   the stack.
 */
import { ValidationError } from './errors.js';

export const EARLIEST_TIME_MS = Date.UTC(1970, 0, 1);
export const LATEST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** 100 years of 365.25 days. */
export const MAX_DELAY_MS = 100 * 365.25 * 86_400_000;
export const MAX_PAYLOAD_DEPTH = 64;
/** MySQL's effect_key column is VARCHAR(512). */
export const MAX_EFFECT_KEY_LENGTH = 512;

function invalid(message: string): never {
  throw new ValidationError('INVALID_OPTION', message);
}

const RANGE_TEXT = `from ${new Date(EARLIEST_TIME_MS).toISOString()} to ${new Date(LATEST_TIME_MS).toISOString()}`;

/**
 * ISO 8601 as JavaScript reads it: a date, optionally a time (minutes, seconds, fraction) and an
 * offset (Z, ±hh:mm, ±hhmm); without an offset a date-time is local time, a date alone UTC.
 */
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** Date.parse moves 02-31 to 03-03 and 24:00 to the next day: such text names no time. */
function fieldsExist(m: RegExpExecArray): boolean {
  const [y, mo, d, h = 0, mi = 0, s = 0] = m.slice(1).map((x) => (x === undefined ? undefined : Number(x)));
  if (y === undefined || mo === undefined || d === undefined || mo < 1 || mo > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, mo, 0)).getUTCDate() && h <= 23 && mi <= 59 && s <= 59;
}

/** A time a user gave (Date or ISO 8601 text), checked against the supported range. */
export function checkTime(what: string, v: unknown): Date {
  let d: Date | undefined;
  if (v instanceof Date) d = v;
  else if (typeof v === 'string') {
    const m = ISO_RE.exec(v);
    if (m && fieldsExist(m)) d = new Date(v);
  }
  if (d === undefined || Number.isNaN(d.getTime())) invalid(`${what} is not a valid ISO 8601 date: ${String(v)}`);
  const ms = d.getTime();
  if (ms < EARLIEST_TIME_MS || ms > LATEST_TIME_MS) invalid(`${what} must be ${RANGE_TEXT}; got ${d.toISOString()}`);
  return d;
}

/** A duration that ends up added to the database's now: a number from 0 to MAX_DELAY_MS. */
export function checkDelay(what: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_DELAY_MS) {
    invalid(`${what} must be a number of ms from 0 to ${MAX_DELAY_MS} (100 years); got ${String(v)}`);
  }
  return v;
}

/**
 * Text stored as an identity (idempotency key, lock owner, effect key): 1 to `maxLength` UTF-16
 * units, no NUL, no unpaired surrogate. Returned unchanged.
 */
export function validateKeyText(what: string, v: unknown, maxLength: number): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > maxLength) invalid(`${what} must be a non-empty string of at most ${maxLength} characters`);
  if (v.includes('\u0000')) invalid(`${what} must not contain NUL (\\u0000); got ${JSON.stringify(v)}`);
  if (/\p{Cs}/u.test(v)) invalid(`${what} must be well-formed text: it holds an unpaired surrogate; got ${JSON.stringify(v)}`);
  return v;
}

/** The key of a `ctx.once` effect. */
export function validateEffectKey(key: unknown): string {
  return validateKeyText('effect key', key, MAX_EFFECT_KEY_LENGTH);
}

/** How long a connection of an adapter's own pool may sit idle inside a transaction: a frozen process must not keep its row locks. */
export function idleTransactionTimeoutMs(v: unknown): number {
  if (v === undefined) return 10_000;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1_000 || v > MAX_DELAY_MS) invalid('idleTransactionTimeoutMs must be a whole number of ms, at least 1000');
  return v;
}
