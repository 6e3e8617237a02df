/**
 * Wall-clock time in an IANA zone ↔ instants, from the runtime's time-zone data (Intl). A wall
 * time is held as epoch ms read as if UTC: 02:30 on 2026-03-08 is Date.UTC(2026, 2, 8, 2, 30).
 *
 * Reading a wall time as an instant follows RFC 5545 §3.3.5 (Temporal's 'compatible'): a time
 * that happens twice is its FIRST occurrence; a time skipped by a forward jump is read with the
 * offset in force before the jump (02:30 in a 02:00→03:00 gap is 03:30, the instant 03:30 also
 * stands for). A zone is assumed to change its offset at most once within any two days.
 */

const DAY = 86_400_000;

const formats = new Map<string, Intl.DateTimeFormat>();

function fieldsIn(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    formats.set(zone, f);
  }
  return f;
}

/** The zone's UTC offset (ms) at an instant. */
export function offsetAt(zone: string, instant: number): number {
  const p: Record<string, number> = {};
  for (const part of fieldsIn(zone).formatToParts(instant)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const wall = Date.UTC(p.year ?? 1970, (p.month ?? 1) - 1, p.day, p.hour, p.minute, p.second);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The wall-clock time of an instant. */
export function wallOf(zone: string, instant: number): number {
  return instant + offsetAt(zone, instant);
}

/** The instant a wall-clock time stands for (first occurrence; a skipped time moves forward by the jump). */
export function instantOf(zone: string, wall: number): number {
  // no zone moves its clock twice within a day of one wall time: these are the offsets either side
  const before = offsetAt(zone, wall - DAY);
  const after = offsetAt(zone, wall + DAY);
  if (before === after) return wall - before;
  // the earlier reading first, so a repeated time resolves to its first occurrence
  for (const offset of [Math.max(before, after), Math.min(before, after)]) if (offsetAt(zone, wall - offset) === offset) return wall - offset;
  return wall - before;
}

/** A change of the zone's offset: `at` is the first instant of the new offset. */
interface Shift {
  at: number;
  before: number;
  after: number;
}

/** The offset change in (x − 1 day, x], if any. */
function shiftBefore(zone: string, x: number): Shift | null {
  const before = offsetAt(zone, x - DAY);
  const after = offsetAt(zone, x);
  if (before === after) return null;
  let [lo, hi] = [x - DAY, x];
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (offsetAt(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return { at: hi, before, after };
}

/**
 * The first instant strictly after `t` that some matching wall-clock time stands for, where
 * `nextWall(w)` is the first matching wall time strictly after `w` (null: none). The reading is
 * monotone except across a forward jump, whose skipped wall times land on the same instants as
 * the wall times just after it; those are compared explicitly.
 */
export function nextInZone(zone: string, t: number, nextWall: (w: number) => number | null): number | null {
  const found: number[] = [];
  const recent = shiftBefore(zone, t);
  const jump = recent ? recent.after - recent.before : 0;
  // in the second pass of a repeated hour every repeated wall time stands for the first pass: start after them
  const from = recent && jump < 0 && t < recent.at - jump ? recent.at + recent.before - 1 : wallOf(zone, t);
  const m = nextWall(from);
  if (m !== null) {
    const at = instantOf(zone, m);
    found.push(at);
    const gap = wallOf(zone, at) !== m ? shiftBefore(zone, at) : null;
    // m was skipped by a forward jump: a wall time just after the jump may stand for an earlier instant
    const after = gap && nextWall(gap.at + gap.after - 1);
    if (after != null) found.push(instantOf(zone, after));
  }
  // t lies within a forward jump's length after it: skipped wall times stand for instants after t
  if (recent && jump > 0 && t < recent.at + jump) {
    const skipped = nextWall(t + recent.before);
    if (skipped !== null && skipped < recent.at + recent.after) found.push(skipped - recent.before);
  }
  return found.length ? Math.min(...found) : null;
}
