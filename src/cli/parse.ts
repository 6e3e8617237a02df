/**
 * Parsers for CLI flag values. Each throws commander's InvalidArgumentError with a message
 * that says what was expected, so bad flags exit non-zero with a clear line on stderr.
 */
import { InvalidArgumentError } from 'commander';
import { MAX_DELAY_MS, checkTime } from '../core/index.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "1500ms", "30s", "10m", "2h", "1d"; a bare number means seconds. At most 100 years: every duration ends up added to a time. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`expected a duration like 30s, 10m, 1500ms or 2h (no negatives); got "${text}"`);
  const ms = Math.round(Number(m[1]) * (UNITS[m[2] ?? 's'] ?? 1_000));
  if (!(ms <= MAX_DELAY_MS)) throw new InvalidArgumentError(`expected a duration of at most 100 years (36525d); got "${text}"`);
  return ms;
}

export function parseIntIn(min: number, max: number) {
  return (text: string): number => {
    if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgumentError(`expected an integer; got "${text}"`);
    const n = Number(text);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}; got ${n}`);
    return n;
  };
}

/** A number from 0 to `max`, fractions allowed (e.g. a ratio). */
export function parseNumberTo(max: number) {
  return (text: string): number => {
    if (!/^\d+(\.\d+)?$/.test(text.trim())) throw new InvalidArgumentError(`expected a number >= 0; got "${text}"`);
    const n = Number(text);
    if (n > max) throw new InvalidArgumentError(`expected a number from 0 to ${max}; got ${n}`);
    return n;
  };
}

/** An ISO 8601 time in the range every database holds (core's checkTime). */
export function parseDate(text: string): Date {
  try {
    return checkTime('the time', text);
  } catch (e) {
    throw new InvalidArgumentError(`${(e as Error).message} (e.g. 2026-01-31T09:00:00Z)`);
  }
}

export function parseList(text: string): string[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new InvalidArgumentError('expected a comma-separated list');
  return items;
}

export function parseId(text: string): string {
  if (!/^[1-9]\d{0,18}$/.test(text)) throw new InvalidArgumentError(`expected a job id (a positive integer); got "${text}"`);
  return text;
}
