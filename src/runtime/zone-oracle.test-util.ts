/**
 * Test-only: an independent oracle for cron slots in a time zone, written apart from cron.ts (no
 * croner, no shared helper). It walks real instants minute by minute, reads their UTC offset from
 * Intl's "GMT+05:45" offset name, and so learns which wall-clock minutes happen once, twice (first
 * occurrence kept) or never (read with the offset in force before the gap, RFC 5545 §3.3.5).
 * A slot is the instant of a wall-clock time the cron expression matches; equal instants count once.
 */

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

const offsetNames = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset (ms) at an instant, parsed from Intl's long offset name. */
export function offsetOf(zone: string, ms: number): number {
  let f = offsetNames.get(zone);
  if (!f) offsetNames.set(zone, (f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })));
  const name = f.formatToParts(ms).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /^GMT(?:([+-])(\d\d):(\d\d)(?::(\d\d))?)?$/.exec(name);
  if (!m) throw new Error(`oracle: unexpected offset name "${name}"`);
  const size = (Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0)) * 1000;
  return m[1] === '-' ? -size : size;
}

export interface Transition {
  /** first instant of the new offset */
  at: number;
  before: number;
  after: number;
}

/** Offset changes in [from, to): an hourly scan, then a minute bisection. */
export function transitions(zone: string, from: number, to: number): Transition[] {
  const out: Transition[] = [];
  let prev = offsetOf(zone, from);
  for (let t = from + 3_600_000; t < to; t += 3_600_000) {
    const cur = offsetOf(zone, t);
    if (cur === prev) continue;
    let lo = t - 3_600_000;
    let hi = t;
    while (hi - lo > MIN) {
      const mid = lo + Math.floor((hi - lo) / 2 / MIN) * MIN;
      if (offsetOf(zone, mid) === prev) lo = mid;
      else hi = mid;
    }
    out.push({ at: hi, before: prev, after: cur });
    prev = cur;
  }
  return out;
}

const clocks = new Map<string, Map<number, number>>();

/**
 * Wall-clock minute (as if UTC) → the instant it stands for, for every wall minute of instants in
 * [from − 1 day, to + 1 day): the first occurrence of a repeated minute, and a skipped minute read
 * with the offset before the gap.
 */
export function wallClock(zone: string, from: number, to: number): Map<number, number> {
  const key = `${zone} ${from} ${to}`;
  const known = clocks.get(key);
  if (known) return known;
  const walls = new Map<number, number>();
  let prevWall: number | undefined;
  let prevOffset = 0;
  let hour = NaN;
  let steady: number | null = null;
  for (let u = Math.floor((from - DAY) / HOUR) * HOUR; u < to + DAY; u += MIN) {
    // an hour whose two ends have one offset has it throughout: no zone changes twice within an hour
    if (Math.floor(u / HOUR) !== hour) {
      hour = Math.floor(u / HOUR);
      const first = offsetOf(zone, u);
      steady = first === offsetOf(zone, u + HOUR) ? first : null;
    }
    const offset = steady ?? offsetOf(zone, u);
    const wall = u + offset;
    if (prevWall !== undefined) for (let w = prevWall + MIN; w < wall; w += MIN) if (!walls.has(w)) walls.set(w, w - prevOffset);
    if (!walls.has(wall)) walls.set(wall, u);
    prevWall = wall;
    prevOffset = offset;
  }
  if (clocks.size > 64) clocks.clear();
  clocks.set(key, walls);
  return walls;
}

function values(spec: string, min: number, max: number): Set<number> {
  const out = new Set<number>();
  for (const part of spec.split(',')) {
    const [range = '*', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    const [lo, hi] = range === '*' ? [min, max] : range.split('-').map(Number);
    const top = hi ?? (stepText === undefined ? lo : max);
    for (let v = lo as number; v <= (top as number); v += step) out.add(v === 7 && max === 7 ? 0 : v);
  }
  return out;
}

/** A matcher for plain cron fields (numbers, `*`, ranges, steps, lists); 6 fields put seconds first. */
export function cronMatcher(cron: string): { seconds: number[]; matches: (wallMinute: number) => boolean } {
  const f = cron.trim().split(/\s+/);
  const [sec, min, hour, dom, mon, dow] = (f.length === 6 ? f : ['0', ...f]) as [string, string, string, string, string, string];
  if (dom !== '*' && dow !== '*') throw new Error('oracle: day-of-month together with day-of-week is not modelled');
  const [m, h, d, mo, wd] = [values(min, 0, 59), values(hour, 0, 23), values(dom, 1, 31), values(mon, 1, 12), values(dow, 0, 7)];
  return {
    seconds: [...values(sec, 0, 59)].sort((a, b) => a - b),
    matches: (w) => {
      const t = new Date(w);
      return m.has(t.getUTCMinutes()) && h.has(t.getUTCHours()) && d.has(t.getUTCDate()) && mo.has(t.getUTCMonth() + 1) && wd.has(t.getUTCDay());
    },
  };
}

/** Every slot of `cron` in `zone` with from <= slot < to, ascending, each instant once. */
export function oracleSlots(cron: string, zone: string, from: number, to: number): number[] {
  const { seconds, matches } = cronMatcher(cron);
  const out = new Set<number>();
  for (const [wall, instant] of wallClock(zone, from, to)) {
    if (!matches(wall)) continue;
    for (const s of seconds) {
      const slot = instant + s * 1000;
      if (slot >= from && slot < to) out.add(slot);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/** The first slot strictly after t, from an ascending slot list that covers it (undefined: not covered). */
export function firstAfter(slots: readonly number[], t: number): number | undefined {
  return slots.find((s) => s > t);
}
