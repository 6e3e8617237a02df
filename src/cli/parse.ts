/**
 * Parsers for CLI flag values. Each throws commander's InvalidArgumentError with a message
 * that says what was expected, so bad flags exit non-zero with a clear line on stderr.
 */
import { InvalidArgumentError } from 'commander';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "1500ms", "30s", "10m", "2h", "1d"; a bare number means seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`expected a duration like 30s, 10m, 1500ms or 2h (no negatives); got "${text}"`);
  return Math.round(Number(m[1]) * (UNITS[m[2] ?? 's'] ?? 1_000));
}

export function parseIntIn(min: number, max: number) {
  return (text: string): number => {
    if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgumentError(`expected an integer; got "${text}"`);
    const n = Number(text);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}; got ${n}`);
    return n;
  };
}

export function parseDate(text: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError(`expected an ISO-8601 date like 2026-01-31T09:00:00Z; got "${text}"`);
  return d;
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
