/**
 * Cron timings: 5 and 6 fields, IANA zones, DST in Europe/Warsaw and America/New_York (a 02:30
 * daily job runs once on spring-forward and fall-back days, a repeated time at its first
 * occurrence in every zone), and typed validation errors. The exhaustive DST cases against an
 * independent oracle are in cron-dst.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../core/errors.js';
import { planSlots } from '../core/slots.js';
import { nextAfterFor, validateSchedule } from './cron.js';

const timing = (cron: string, timezone: string) => ({ name: 'x', cron, everyMs: null, timezone });

/** Every slot in [from, to). */
function slots(cron: string, tz: string, from: string, to: string): string[] {
  const next = nextAfterFor(timing(cron, tz));
  const out: string[] = [];
  for (let t = next(new Date(Date.parse(from) - 1)); t && t.getTime() < Date.parse(to); t = next(t)) out.push(t.toISOString());
  return out;
}

describe('cron with time zones (croner)', () => {
  it('Europe/Warsaw: 02:30 daily runs once on the spring-forward day (at 03:30 local) and once on the fall-back day (02:30 CEST, the first)', () => {
    assert.deepEqual(slots('30 2 * * *', 'Europe/Warsaw', '2025-03-29T00:00:00Z', '2025-03-31T12:00:00Z'), [
      '2025-03-29T01:30:00.000Z', // 02:30 CET
      '2025-03-30T01:30:00.000Z', // 02:30 does not exist: 03:30 CEST
      '2025-03-31T00:30:00.000Z', // 02:30 CEST
    ]);
    assert.deepEqual(slots('30 2 * * *', 'Europe/Warsaw', '2025-10-25T00:00:00Z', '2025-10-27T12:00:00Z'), [
      '2025-10-25T00:30:00.000Z', // 02:30 CEST
      '2025-10-26T00:30:00.000Z', // 02:30 happens twice: once, at the first (CEST)
      '2025-10-27T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('America/New_York: 02:30 daily runs once on each DST transition day', () => {
    const spring = slots('30 2 * * *', 'America/New_York', '2025-03-08T12:00:00Z', '2025-03-10T12:00:00Z');
    assert.equal(spring.length, 2);
    assert.equal(spring.filter((s) => s.startsWith('2025-03-09')).length, 1);
    const fall = slots('30 2 * * *', 'America/New_York', '2025-11-01T12:00:00Z', '2025-11-03T12:00:00Z');
    assert.equal(fall.filter((s) => s.startsWith('2025-11-02')).length, 1);
  });

  it('a scheduler ticking through the fall-back night enqueues the 02:30 Warsaw slot once', () => {
    const next = nextAfterFor(timing('30 2 * * *', 'Europe/Warsaw'));
    let at: Date | null = next(new Date('2025-10-25T12:00:00Z'));
    const fired: string[] = [];
    for (let t = Date.parse('2025-10-25T12:00:00Z'); t < Date.parse('2025-10-26T06:00:00Z'); t += 20_000) {
      const plan = at && planSlots({ policy: 'skip', windowMs: null, max: 10 }, at, new Date(t), next, 60_000);
      if (!plan) continue;
      fired.push(...plan.fire.map((d) => d.toISOString()));
      at = plan.nextRunAt;
    }
    assert.deepEqual(fired, ['2025-10-26T00:30:00.000Z']);
  });

  it('a repeated wall time fires at its first occurrence, east and west of UTC alike', () => {
    const onDay = (cron: string, tz: string, day: string) => slots(cron, tz, `${day}T00:00:00Z`, `${day}T23:59:59Z`);
    assert.deepEqual(onDay('30 1 * * *', 'America/New_York', '2026-11-01'), ['2026-11-01T05:30:00.000Z'], '01:30 EDT, not 01:30 EST');
    assert.deepEqual(onDay('30 2 * * *', 'Europe/Warsaw', '2026-10-25'), ['2026-10-25T00:30:00.000Z'], '02:30 CEST, not 02:30 CET');
    assert.deepEqual(onDay('45 1 * * *', 'Australia/Lord_Howe', '2026-04-04'), ['2026-04-04T14:45:00.000Z'], '01:45 +11, not 01:45 +10:30');
    assert.deepEqual(onDay('30 23 * * *', 'America/Santiago', '2026-04-05'), ['2026-04-05T02:30:00.000Z'], '23:30 -03, not 23:30 -04');
  });

  it('the issue repro: a nightly 02:30 in New York is enqueued on the spring-forward day when the look-back asks from just before its slot', () => {
    const next = nextAfterFor(timing('30 2 * * *', 'America/New_York'));
    const first = next(new Date('2026-03-07T07:30:00Z'));
    assert.equal(first?.toISOString(), '2026-03-08T07:30:00.000Z', '02:30 does not exist that day: 03:30 EDT');
    const plan = planSlots({ policy: 'skip', windowMs: null, max: 100 }, first!, new Date('2026-03-08T07:30:01Z'), next, 60_000);
    assert.deepEqual(plan?.fire.map((d) => d.toISOString()), ['2026-03-08T07:30:00.000Z']);
    assert.equal(plan?.nextRunAt?.toISOString(), '2026-03-09T06:30:00.000Z');
  });

  it('nextAfter is strictly after its input even in the second pass of a repeated hour', () => {
    const next = nextAfterFor(timing('30 1 * * *', 'America/New_York'));
    // 01:00 EST, the second 01:00: the day's 01:30 already was (05:30Z); the next is tomorrow's
    assert.equal(next(new Date('2026-11-01T06:00:00Z'))?.toISOString(), '2026-11-02T06:30:00.000Z');
  });

  it('6 fields put seconds first; 5 fields start at the minute', () => {
    assert.deepEqual(slots('*/20 * * * * *', 'UTC', '2030-01-01T00:00:00Z', '2030-01-01T00:01:00Z'), ['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:20.000Z', '2030-01-01T00:00:40.000Z']);
    assert.equal(slots('* * * * *', 'UTC', '2030-01-01T00:00:00Z', '2030-01-01T01:00:00Z').length, 60);
  });

  it('invalid cron, unknown time zone, zero/negative interval: typed ValidationError', () => {
    const bad = (input: Parameters<typeof validateSchedule>[0]) =>
      assert.throws(() => validateSchedule(input), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_SCHEDULE', JSON.stringify(input));
    bad({ name: 'a', type: 't', cron: '61 * * * *' });
    bad({ name: 'a', type: 't', cron: 'every day' });
    bad({ name: 'a', type: 't', cron: '* * *' });
    bad({ name: 'a', type: 't', cron: '0 2 * * *', timezone: 'Mars/Olympus' });
    bad({ name: 'a', type: 't', everyMs: 0 });
    bad({ name: 'a', type: 't', everyMs: -1000 });
    bad({ name: 'a', type: 't' });
    bad({ name: 'a', type: 't', cron: '* * * * *', everyMs: 1000 });
    bad({ name: 'a', type: 't', everyMs: 1000, misfire: 'sometimes' as never });
    assert.equal(validateSchedule({ name: 'ok', type: 't', cron: '0 2 * * *', timezone: 'Europe/Warsaw' }).misfire, 'skip');
  });
});
