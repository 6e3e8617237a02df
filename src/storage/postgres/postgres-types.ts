/**
 * Value parsers for the pools this adapter creates. node-postgres parses every timestamptz
 * with a general regular expression; a claim returns four of them per job (eight before
 * migration 4), and that parse was the largest single cost on the Node side of a drain. The
 * server always sends the ISO format (`2026-11-22 01:20:18.702+00`, DateStyle ISO is the
 * default and what pg expects), which this reads by position; anything else (BC, infinity, a
 * seconds offset) goes to pg's own parser.
 */
import pg from 'pg';

const TIMESTAMPTZ_OID = 1184;
const fallback = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (s: string) => Date;

function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The last few texts read and their instants. A claim's rows repeat four texts: each row's
 * started_at and locked_until are the claim's own, and jobs enqueued together share run_at and
 * created_at. Four slots, filled round-robin, so the columns' alternation does not evict them
 * (one slot did not help: the eleventh round). Over a claim's sequence of texts: 95 ns per parse
 * against 272 without the memo (the twelfth round, docs/performance.md).
 */
const MEMO = 4;
// empty slots hold no text, so that no input (not even '') matches them
const memoText: (string | undefined)[] = new Array<string | undefined>(MEMO).fill(undefined);
const memoTime: number[] = new Array<number>(MEMO).fill(0);
let memoNext = 0;

/** `YYYY-MM-DD HH:MM:SS[.f…](+|-)HH[:MM]` → Date; other shapes → pg's parser. */
export function parseTimestamptz(s: string): Date {
  for (let k = 0; k < MEMO; k++) if (memoText[k] === s) return new Date(memoTime[k] as number);
  const d = parseFresh(s);
  // only valid instants: pg's parser reads 'infinity' as a number, not a Date
  if (d instanceof Date && Number.isFinite(d.getTime())) {
    memoText[memoNext] = s;
    memoTime[memoNext] = d.getTime();
    memoNext = (memoNext + 1) % MEMO;
  }
  return d;
}

function parseFresh(s: string): Date {
  if (s.length < 22 || s.charCodeAt(4) !== 45 || s.charCodeAt(10) !== 32) return fallback(s);
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46) {
    // fraction: keep milliseconds, as a JS Date does
    let scale = 100;
    for (i++; i < s.length; i++) {
      const d = s.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      ms += d * scale;
      scale /= 10;
    }
    ms = Math.floor(ms);
  }
  const sign = s.charCodeAt(i) === 43 ? 1 : s.charCodeAt(i) === 45 ? -1 : 0;
  const offH = digits(s, i + 1, i + 3);
  let offM = 0;
  let end = i + 3;
  if (s.charCodeAt(end) === 58) {
    offM = digits(s, end + 1, end + 3);
    end += 3;
  }
  const year = digits(s, 0, 4);
  // Date.UTC reads years 0–99 as 1900–1999: leave the far past to pg
  if (sign === 0 || end !== s.length || !(year >= 100)) return fallback(s);
  const t = Date.UTC(year, digits(s, 5, 7) - 1, digits(s, 8, 10), digits(s, 11, 13), digits(s, 14, 16), digits(s, 17, 19), ms);
  if (Number.isNaN(t) || Number.isNaN(offH) || Number.isNaN(offM)) return fallback(s);
  return new Date(t - sign * (offH * 60 + offM) * 60_000);
}

/** The `types` option for pools this adapter creates: pg's parsers, with the timestamptz one above. */
export const fastTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ_OID && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};
