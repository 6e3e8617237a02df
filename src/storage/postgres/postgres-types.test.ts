import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import { parseTimestamptz } from './postgres-types.js';

const pgParse = pg.types.getTypeParser(1184, 'text') as (s: string) => Date;

describe('parseTimestamptz', () => {
  it('reads what the server sends exactly as pg does', () => {
    for (const s of ['2026-11-22 01:20:18.702+00', '2026-11-22 01:20:18+00', '1999-12-31 23:59:59.999999-08', '2026-03-29 02:30:00.5+05:30', '0001-01-01 00:00:00+00']) {
      assert.equal(parseTimestamptz(s).getTime(), pgParse(s).getTime(), s);
    }
  });

  it('hands odd shapes to pg: BC, infinity, seconds in the offset', () => {
    for (const s of ['0044-03-15 12:00:00+00 BC', 'infinity', '-infinity', '1900-01-01 00:00:00+00:19:32']) {
      assert.equal(String(parseTimestamptz(s)), String(pgParse(s)), s);
    }
  });

  it('agrees with pg on any instant and offset (property)', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true }), fc.integer({ min: -12 * 60, max: 14 * 60 }), fc.boolean(), (d, offMin, withMs) => {
        const local = new Date(d.getTime() + offMin * 60_000).toISOString();
        const frac = withMs ? local.slice(19, 23) : '';
        const sign = offMin < 0 ? '-' : '+';
        const a = Math.abs(offMin);
        const off = `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}${a % 60 ? `:${String(a % 60).padStart(2, '0')}` : ''}`;
        const s = `${local.slice(0, 10)} ${local.slice(11, 19)}${frac}${off}`;
        assert.equal(parseTimestamptz(s).getTime(), pgParse(s).getTime(), s);
      }),
    );
  });

  it('repeated texts (a claim repeats its timestamps): the same instant each time, in a fresh Date', () => {
    const texts = ['2026-11-22 01:20:18.702+00', '2026-11-22 01:20:18.703+00', '2026-11-22 01:25:18.702+00', '2026-11-21 23:59:59.1-08', '2026-11-22 01:20:19+00', 'infinity'];
    const seen: Date[] = [];
    // rounds over more texts than the memo holds, in changing orders
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < texts.length; i++) {
        const s = texts[(i * (round + 1)) % texts.length] as string;
        const got = parseTimestamptz(s);
        assert.equal(String(got), String(pgParse(s)), s);
        if (got instanceof Date) {
          assert.ok(!seen.includes(got), 'a Date handed out twice');
          seen.push(got);
        }
      }
    }
    // a caller changing its Date does not change what the next row gets
    const first = parseTimestamptz(texts[0] as string);
    first.setTime(0);
    assert.equal(parseTimestamptz(texts[0] as string).getTime(), pgParse(texts[0] as string).getTime());
  });

  it("a fresh process's first texts, the empty one too, are parsed, not matched with empty slots", async () => {
    // a module instance of its own: its memo has not been filled by the tests above
    const fresh = (await import(`./postgres-types.js?fresh=${Date.now()}`)) as { parseTimestamptz: (s: string) => Date };
    for (const s of ['', '', '2026-11-22 01:20:18.702+00', '']) assert.equal(String(fresh.parseTimestamptz(s)), String(pgParse(s)), JSON.stringify(s));
  });
});
