/**
 * Alert decisions under a fake clock: each rule kind's condition, firing and resolving once per
 * incident (a rule whose row says firing is not fired again), forMs / keepFiringForMs against a
 * flapping value, and rules checked before anything runs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AlertMeasurements, AlertMemo, AlertRule, AlertRuleSpec } from './alerts.js';
import { ALERT_WEBHOOK_TYPE, alertNotification, alertWindows, checkAlertRule, decideAlerts, describeAlert, normalizeAlertRules, notifies, spellDuration } from './alerts.js';
import type { AlertStateRow, AttemptOutcomeCount } from './storage.js';

const T0 = Date.UTC(2030, 0, 1);
const rule = (r: AlertRule): AlertRuleSpec => normalizeAlertRules([r])[0] as AlertRuleSpec;
const rate = rule({ kind: 'failureRate', type: 'email', windowMs: 300_000, above: 0.2, minAttempts: 4 });

function measured(over: Partial<AlertMeasurements> & { attempts?: AttemptOutcomeCount[]; windowMs?: number } = {}): AlertMeasurements {
  return { nowMs: T0, outcomes: new Map([[over.windowMs ?? 300_000, over.attempts ?? []]]), health: [], unhandled: [], ...over };
}
const ended = (outcome: AttemptOutcomeCount['outcome'], count: number, type = 'email', queue = 'default'): AttemptOutcomeCount => ({ type, queue, outcome, count });
const row = (r: string, state: 'ok' | 'firing', episode: number): AlertStateRow => ({ rule: r, state, episode, since: new Date(T0), value: null, updatedAt: new Date(T0) });

describe('alert rules', () => {
  it('failureRate: failed / (failed + succeeded) of its type, once minAttempts ended; snoozes and hand-backs count neither way', () => {
    const m = measured({ attempts: [ended('failed', 2), ended('timed_out', 1), ended('succeeded', 3), ended('snoozed', 9), ended('handed_back', 9), ended('failed', 50, 'other')] });
    assert.deepEqual(checkAlertRule(rate, m), { rule: rate, value: 0.5, holds: true, clears: false });
    // at the threshold: not above it
    assert.equal(checkAlertRule(rate, measured({ attempts: [ended('failed', 1), ended('succeeded', 4)] })).holds, false);
    // too few attempts to fire, however bad; but not clear either: a firing rule keeps firing
    assert.deepEqual(checkAlertRule(rate, measured({ attempts: [ended('dead', 3)] })), { rule: rate, value: 1, holds: false, clears: false });
    assert.deepEqual(checkAlertRule(rate, measured()), { rule: rate, value: null, holds: false, clears: true });
  });

  it('counts the window the rule names, one query per distinct window', () => {
    const dead = rule({ kind: 'deadJobs', windowMs: 3_600_000 });
    const m: AlertMeasurements = { ...measured(), outcomes: new Map([[300_000, [ended('dead', 1)]], [3_600_000, [ended('dead', 4), ended('dead', 2, 'sms', 'urgent')]]]) };
    assert.equal(checkAlertRule(dead, m).value, 6);
    assert.deepEqual(alertWindows([rate, dead, rule({ kind: 'failureRate', name: 'all', windowMs: 300_000, above: 0 }), rule({ kind: 'unhandled' })]), [300_000, 3_600_000]);
  });

  it('deadJobs above a count, by type and queue; a rule without a type leaves out the webhook deliveries', () => {
    const attempts = [ended('dead', 2), ended('dead', 1, 'sms', 'urgent'), ended('dead', 7, ALERT_WEBHOOK_TYPE), ended('failed', 5)];
    assert.deepEqual(checkAlertRule(rule({ kind: 'deadJobs', windowMs: 300_000 }), measured({ attempts })).value, 3);
    assert.equal(checkAlertRule(rule({ kind: 'deadJobs', queue: 'urgent', windowMs: 300_000 }), measured({ attempts })).value, 1);
    assert.equal(checkAlertRule(rule({ kind: 'deadJobs', type: ALERT_WEBHOOK_TYPE, windowMs: 300_000 }), measured({ attempts })).value, 7);
    assert.equal(checkAlertRule(rule({ kind: 'deadJobs', windowMs: 300_000, above: 3 }), measured({ attempts })).holds, false);
  });

  it('stuckQueue: the oldest due job of its queue (any queue when none is named) older than maxAgeMs', () => {
    const health = [
      { queue: 'default', due: 3, running: 1, oldestDueAgeMs: 90_000 },
      { queue: 'mail', due: 1, running: 0, oldestDueAgeMs: 700_000 },
      { queue: 'idle', due: 0, running: 2, oldestDueAgeMs: null },
    ];
    const any = rule({ kind: 'stuckQueue', maxAgeMs: 600_000 });
    assert.deepEqual(checkAlertRule(any, measured({ health })), { rule: any, value: 700_000, holds: true, clears: false });
    assert.equal(checkAlertRule(rule({ kind: 'stuckQueue', queue: 'default', maxAgeMs: 600_000 }), measured({ health })).holds, false);
    assert.deepEqual(checkAlertRule(rule({ kind: 'stuckQueue', queue: 'idle', maxAgeMs: 1 }), measured({ health })).value, null);
  });

  it('unhandled: due jobs no live worker handles, optionally of one type or queue', () => {
    const unhandled = [{ type: 'pdf', queue: 'default', due: 2 }, { type: 'sms', queue: 'urgent', due: 1 }];
    assert.deepEqual(checkAlertRule(rule({ kind: 'unhandled' }), measured({ unhandled })).value, 3);
    assert.equal(checkAlertRule(rule({ kind: 'unhandled', type: 'pdf', queue: 'urgent' }), measured({ unhandled })).holds, false);
  });
});

describe('alert decisions', () => {
  const bad = measured({ attempts: [ended('failed', 4), ended('succeeded', 1)] });
  const good = measured({ attempts: [ended('succeeded', 10)] });

  it('fires once: from no row (episode 0) to firing; a firing row is not fired again; resolves from its episode', () => {
    const first = decideAlerts([rate], bad, [], new Map());
    assert.deepEqual(first.transitions, [{ rule: rate.name, episode: 0, state: 'firing', value: 0.8 }]);
    assert.deepEqual(decideAlerts([rate], bad, [row(rate.name, 'firing', 1)], first.memo).transitions, []);
    assert.deepEqual(decideAlerts([rate], good, [row(rate.name, 'firing', 1)], first.memo).transitions, [{ rule: rate.name, episode: 1, state: 'ok', value: 0 }]);
    // a firing rate keeps firing on a trickle of failures below minAttempts; it resolves once none are left
    assert.deepEqual(decideAlerts([rate], measured({ attempts: [ended('failed', 1)] }), [row(rate.name, 'firing', 1)], new Map()).transitions, []);
    assert.deepEqual(decideAlerts([rate], measured(), [row(rate.name, 'firing', 1)], new Map()).transitions, [{ rule: rate.name, episode: 1, state: 'ok', value: null }]);
    // a new incident after a resolve is the next episode
    assert.deepEqual(decideAlerts([rate], bad, [row(rate.name, 'ok', 2)], new Map()).transitions, [{ rule: rate.name, episode: 2, state: 'firing', value: 0.8 }]);
  });

  it('nothing is written while all is well: no row, no move', () => {
    const rules = normalizeAlertRules([
      { kind: 'failureRate', windowMs: 300_000, above: 0.1 },
      { kind: 'deadJobs', windowMs: 300_000 },
      { kind: 'stuckQueue', maxAgeMs: 60_000 },
      { kind: 'unhandled' },
    ]);
    const m = measured({ attempts: [ended('succeeded', 100)], health: [{ queue: 'default', due: 5, running: 2, oldestDueAgeMs: 1_000 }] });
    const d = decideAlerts(rules, m, [], new Map());
    assert.deepEqual(d.transitions, []);
    assert.deepEqual(d.checks.map((c) => c.holds), [false, false, false, false]);
  });

  it('forMs: fires only once the condition held that long; a flap in between starts over', () => {
    const slow = rule({ kind: 'failureRate', type: 'email', windowMs: 300_000, above: 0.2, minAttempts: 4, forMs: 60_000 });
    let memo: ReadonlyMap<string, AlertMemo> = new Map();
    const at = (ms: number, m: AlertMeasurements, rows: AlertStateRow[] = []) => {
      const d = decideAlerts([slow], { ...m, nowMs: T0 + ms }, rows, memo);
      memo = d.memo;
      return d.transitions.map((t) => t.state);
    };
    assert.deepEqual(at(0, bad), []);
    assert.deepEqual(at(30_000, bad), []);
    assert.deepEqual(at(45_000, good), []);
    assert.deepEqual(at(60_000, bad), []);
    assert.deepEqual(at(110_000, bad), []);
    assert.deepEqual(at(120_000, bad), ['firing']);
  });

  it('keepFiringForMs: a firing rule resolves only once the condition was clear that long', () => {
    const sticky = rule({ kind: 'failureRate', type: 'email', windowMs: 300_000, above: 0.2, minAttempts: 4, keepFiringForMs: 60_000 });
    const firing = [row(sticky.name, 'firing', 1)];
    let memo: ReadonlyMap<string, AlertMemo> = new Map();
    const at = (ms: number, m: AlertMeasurements) => {
      const d = decideAlerts([sticky], { ...m, nowMs: T0 + ms }, firing, memo);
      memo = d.memo;
      return d.transitions.map((t) => t.state);
    };
    assert.deepEqual(at(0, good), []);
    assert.deepEqual(at(40_000, bad), []);
    assert.deepEqual(at(50_000, good), []);
    assert.deepEqual(at(100_000, good), []);
    assert.deepEqual(at(110_000, good), ['ok']);
  });

  it('a notification per moved row: firing, then resolved; an ok row of episode 1 is none', () => {
    const fired = { ...row(rate.name, 'firing', 3), value: 0.8 };
    const n = alertNotification(rate, fired);
    assert.deepEqual(n, {
      id: 'failure-rate:type:email#3', rule: 'failure-rate:type:email', kind: 'failureRate', state: 'firing', value: 0.8, since: new Date(T0).toISOString(), episode: 3,
      summary: 'FIRING: failure rate of type email over 5m: 80 % (fires above 20 %, from 4 attempts)',
    });
    assert.equal(alertNotification(rate, row(rate.name, 'ok', 4)).state, 'resolved');
    assert.deepEqual([notifies(fired), notifies(row('r', 'ok', 4)), notifies(row('r', 'ok', 1))], [true, true, false]);
  });

  it('describes each kind in one line', () => {
    assert.equal(describeAlert(rule({ kind: 'stuckQueue', queue: 'mail', maxAgeMs: 600_000 }), 754_000), 'oldest due job in queue mail: waiting 754s (fires above 10m)');
    assert.equal(describeAlert(rule({ kind: 'unhandled', type: 'pdf' }), 2), '2 due job(s) of type pdf that no live worker handles');
    assert.equal(describeAlert(rule({ kind: 'deadJobs', type: 'a', queue: 'q', windowMs: 3_600_000 }), 1), '1 job(s) of type a in queue q dead within 1h (fires above 0)');
    assert.deepEqual([spellDuration(250), spellDuration(1_500), spellDuration(90_000), spellDuration(86_400_000)], ['250ms', '1.5s', '90s', '1d']);
  });
});

describe('alert rules are checked before anything runs', () => {
  const rejects = (r: unknown, pattern: RegExp) =>
    assert.throws(() => normalizeAlertRules([r as AlertRule]), (e: Error & { code?: string }) => e.code === 'INVALID_OPTION' && pattern.test(e.message));

  it('defaults: names from kind and target, minAttempts 5, above 0, no delays', () => {
    const [a, b, c] = normalizeAlertRules([{ kind: 'failureRate', queue: 'mail', windowMs: 60_000, above: 0.5 }, { kind: 'deadJobs', windowMs: 60_000 }, { kind: 'stuckQueue', queue: 'q', maxAgeMs: 5 }]);
    assert.deepEqual([a?.name, a?.minAttempts, b?.name, b?.above, c?.name, c?.forMs, c?.keepFiringForMs], ['failure-rate:queue:mail', 5, 'dead', 0, 'stuck:queue:q', 0, 0]);
  });

  it('bad kinds, thresholds, durations and names are refused with what was expected', () => {
    rejects({ kind: 'cpu' }, /needs a kind \(failureRate, deadJobs, stuckQueue, unhandled\)/);
    rejects(null, /needs a kind/);
    rejects({ kind: 'failureRate', windowMs: 60_000, above: 1 }, /above must be a ratio from 0 to below 1/);
    rejects({ kind: 'failureRate', windowMs: 60_000, above: '0.2' }, /above must be a ratio/);
    rejects({ kind: 'failureRate', windowMs: 0, above: 0.2 }, /windowMs must be an integer from 1/);
    rejects({ kind: 'deadJobs', windowMs: 1_000, above: -1 }, /above must be an integer from 0/);
    rejects({ kind: 'stuckQueue' }, /maxAgeMs must be an integer/);
    rejects({ kind: 'unhandled', forMs: 1.5 }, /forMs must be an integer/);
    rejects({ kind: 'unhandled', name: 'has space' }, /alert rule name must be 1-128 characters/);
    rejects({ kind: 'unhandled', queue: '' }, /alert rule queue/);
  });

  it('two rules with one name are refused', () => {
    assert.throws(() => normalizeAlertRules([{ kind: 'deadJobs', windowMs: 1_000 }, { kind: 'deadJobs', windowMs: 60_000, above: 5 }]), /two alert rules are named dead: give each its own name/);
    assert.equal(normalizeAlertRules([{ kind: 'deadJobs', windowMs: 1_000 }, { kind: 'deadJobs', name: 'dead-many', windowMs: 60_000, above: 5 }]).length, 2);
  });
});
