/**
 * Cron timings by croner: 5 and 6 fields, IANA zones, DST in Europe/Warsaw and America/New_York
 * (a 02:30 daily job runs once on spring-forward and fall-back days), and typed validation errors.
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
  it('Europe/Warsaw: 02:30 daily runs once on the spring-forward day (at 03:30 local) and once on the fall-back day', () => {
    assert.deepEqual(slots('30 2 * * *', 'Europe/Warsaw', '2025-03-29T00:00:00Z', '2025-03-31T12:00:00Z'), [
      '2025-03-29T01:30:00.000Z', // 02:30 CET
      '2025-03-30T01:30:00.000Z', // 02:30 does not exist: 03:30 CEST
      '2025-03-31T00:30:00.000Z', // 02:30 CEST
    ]);
    assert.deepEqual(slots('30 2 * * *', 'Europe/Warsaw', '2025-10-25T00:00:00Z', '2025-10-27T12:00:00Z'), [
      '2025-10-25T00:30:00.000Z', // 02:30 CEST
      '2025-10-26T01:30:00.000Z', // 02:30 happens twice: once
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
    assert.deepEqual(fired, ['2025-10-26T01:30:00.000Z']);
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
