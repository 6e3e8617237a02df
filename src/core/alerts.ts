/**
 * Alert rules and their decisions: given what the database measured, whether each rule's
 * condition holds, and which rules move to firing or back to ok. Pure; the evaluator
 * (src/runtime/alert-evaluator.ts) measures, then performs each move as `alerts.transition`, a
 * compare-and-set on the rule's episode, so any number of evaluators notify each move once.
 *
 * A rule without a row is ok: nothing is written, and nothing notified, while all is well.
 */
import { ValidationError } from './errors.js';
import { validateName } from './job-input.js';
import type { AlertStateRow, AlertTransition } from './storage.js';
import type { AttemptOutcome } from './status.js';

export * from './alert-rules.js';
import { ALERT_KINDS, ALERT_WEBHOOK_TYPE } from './alert-rules.js';
import type { AlertCheck, AlertKind, AlertMeasurements, AlertMemo, AlertNotification, AlertRule, AlertRuleSpec } from './alert-rules.js';

const SLUG: Record<AlertKind, string> = { failureRate: 'failure-rate', deadJobs: 'dead', stuckQueue: 'stuck', unhandled: 'unhandled' };
/** outcomes counted as failed attempts; succeeded ones count as well, everything else (snoozed, handed back, cancelled) neither */
const FAILED: ReadonlySet<AttemptOutcome> = new Set(['failed', 'dead', 'timed_out', 'max_runtime', 'lease_expired', 'lease_lost']);
const MAX_WINDOW_MS = 366 * 86_400_000;

function invalid(message: string): never {
  throw new ValidationError('INVALID_OPTION', message);
}

function intIn(what: string, v: unknown, min: number, max = MAX_WINDOW_MS): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) invalid(`${what} must be an integer from ${min} to ${max}; got ${JSON.stringify(v)}`);
  return v;
}

/** Check rules and fill in defaults; names must be unique. Throws ValidationError on the first bad one. */
export function normalizeAlertRules(rules: readonly AlertRule[]): AlertRuleSpec[] {
  const specs = rules.map(normalizeRule);
  const seen = new Set<string>();
  for (const s of specs) {
    if (seen.has(s.name)) invalid(`two alert rules are named ${s.name}: give each its own name`);
    seen.add(s.name);
  }
  return specs;
}

function normalizeRule(r: AlertRule): AlertRuleSpec {
  if (typeof r !== 'object' || r === null || !ALERT_KINDS.includes(r.kind)) {
    invalid(`an alert rule needs a kind (${ALERT_KINDS.join(', ')}); got ${JSON.stringify((r as { kind?: unknown } | null)?.kind)}`);
  }
  const type = r.kind !== 'stuckQueue' && r.type !== undefined ? validateName('alert rule type', r.type) : null;
  const queue = r.queue === undefined ? null : validateName('alert rule queue', r.queue);
  const name = validateName('alert rule name', r.name ?? [SLUG[r.kind], ...(type ? ['type', type] : []), ...(queue ? ['queue', queue] : [])].join(':'));
  const at = `alert rule ${name}`;
  const spec: AlertRuleSpec = {
    name, kind: r.kind, type, queue, windowMs: null, above: 0, minAttempts: 1, maxAgeMs: null,
    forMs: intIn(`${at}: forMs`, r.forMs ?? 0, 0), keepFiringForMs: intIn(`${at}: keepFiringForMs`, r.keepFiringForMs ?? 0, 0),
  };
  switch (r.kind) {
    case 'failureRate':
      if (typeof r.above !== 'number' || !(r.above >= 0 && r.above < 1)) invalid(`${at}: above must be a ratio from 0 to below 1 (0.2 for 20 %); got ${JSON.stringify(r.above)}`);
      return { ...spec, windowMs: intIn(`${at}: windowMs`, r.windowMs, 1), above: r.above, minAttempts: intIn(`${at}: minAttempts`, r.minAttempts ?? 5, 1, 1_000_000) };
    case 'deadJobs':
      return { ...spec, windowMs: intIn(`${at}: windowMs`, r.windowMs, 1), above: intIn(`${at}: above`, r.above ?? 0, 0, 1_000_000_000) };
    case 'stuckQueue':
      return { ...spec, maxAgeMs: intIn(`${at}: maxAgeMs`, r.maxAgeMs, 1) };
    case 'unhandled':
      return spec;
  }
}

/** The windows to count attempts over: one query each, however many rules share one. */
export function alertWindows(rules: readonly AlertRuleSpec[]): number[] {
  return [...new Set(rules.flatMap((r) => (r.windowMs === null ? [] : [r.windowMs])))];
}

function targets(rule: AlertRuleSpec, type: string | null, queue: string): boolean {
  const typeOk = rule.type === null ? type !== ALERT_WEBHOOK_TYPE : type === rule.type;
  return typeOk && (rule.queue === null || rule.queue === queue);
}

function held(rule: AlertRuleSpec, value: number | null, holds: boolean): AlertCheck {
  return { rule, value, holds, clears: !holds };
}

/** Whether the rule's condition holds now, and the value it is judged by. */
export function checkAlertRule(rule: AlertRuleSpec, m: AlertMeasurements): AlertCheck {
  const counted = (pick: (o: AttemptOutcome) => boolean) =>
    (m.outcomes.get(rule.windowMs ?? -1) ?? []).filter((c) => targets(rule, c.type, c.queue) && pick(c.outcome)).reduce((a, c) => a + c.count, 0);
  switch (rule.kind) {
    case 'failureRate': {
      const failed = counted((o) => FAILED.has(o));
      const total = failed + counted((o) => o === 'succeeded');
      const value = total === 0 ? null : failed / total;
      // minAttempts keeps a few failures from firing the rule; once firing, a trickle that still fails does not resolve it
      return { rule, value, holds: value !== null && total >= rule.minAttempts && value > rule.above, clears: value === null || value <= rule.above };
    }
    case 'deadJobs': {
      const value = counted((o) => o === 'dead');
      return held(rule, value, value > rule.above);
    }
    case 'stuckQueue': {
      const ages = m.health.filter((h) => targets(rule, null, h.queue) && h.oldestDueAgeMs !== null).map((h) => h.oldestDueAgeMs as number);
      const value = ages.length === 0 ? null : Math.max(...ages);
      return held(rule, value, value !== null && value > (rule.maxAgeMs ?? Infinity));
    }
    case 'unhandled': {
      const value = m.unhandled.filter((u) => targets(rule, u.type, u.queue)).reduce((a, u) => a + u.due, 0);
      return held(rule, value, value > 0);
    }
  }
}

export interface AlertDecision {
  checks: AlertCheck[];
  /** the moves to attempt, each from the episode this evaluation read */
  transitions: AlertTransition[];
  memo: Map<string, AlertMemo>;
}

/**
 * Decide each rule's move: firing once its condition held for forMs, ok once it was clear for
 * keepFiringForMs; no move otherwise. `states` are the rows as read this evaluation.
 */
export function decideAlerts(rules: readonly AlertRuleSpec[], m: AlertMeasurements, states: readonly AlertStateRow[], memo: ReadonlyMap<string, AlertMemo>): AlertDecision {
  const rows = new Map(states.map((s) => [s.rule, s]));
  const out: AlertDecision = { checks: [], transitions: [], memo: new Map() };
  for (const rule of rules) {
    const check = checkAlertRule(rule, m);
    const prev = memo.get(rule.name);
    const next: AlertMemo = { heldSince: check.holds ? (prev?.heldSince ?? m.nowMs) : null, clearSince: check.clears ? (prev?.clearSince ?? m.nowMs) : null };
    const row = rows.get(rule.name);
    const firing = row?.state === 'firing';
    const episode = row?.episode ?? 0;
    if (!firing && check.holds && m.nowMs - (next.heldSince ?? m.nowMs) >= rule.forMs) {
      out.transitions.push({ rule: rule.name, episode, state: 'firing', value: check.value });
    } else if (firing && check.clears && m.nowMs - (next.clearSince ?? m.nowMs) >= rule.keepFiringForMs) {
      out.transitions.push({ rule: rule.name, episode, state: 'ok', value: check.value });
    }
    out.checks.push(check);
    out.memo.set(rule.name, next);
  }
  return out;
}

/** Whether a row stands for a notification: a firing, or a resolve (an ok row after one). */
export function notifies(row: AlertStateRow): boolean {
  return row.state === 'firing' || row.episode > 1;
}

/** The notification a moved row stands for. */
export function alertNotification(rule: AlertRuleSpec, row: AlertStateRow): AlertNotification {
  const state = row.state === 'firing' ? 'firing' : 'resolved';
  return {
    id: `${row.rule}#${row.episode}`, rule: row.rule, kind: rule.kind, state, value: row.value, since: row.since.toISOString(), episode: row.episode,
    summary: `${state === 'firing' ? 'FIRING' : 'resolved'}: ${describeAlert(rule, row.value)}`,
  };
}

/** One line for people: what the rule watches and the value now. */
export function describeAlert(rule: AlertRuleSpec, value: number | null): string {
  const of = [rule.type ? `type ${rule.type}` : '', rule.queue ? `queue ${rule.queue}` : ''].filter(Boolean).join(' in ');
  const scope = of ? ` of ${of}` : '';
  switch (rule.kind) {
    case 'failureRate':
      return `failure rate${scope} over ${spellDuration(rule.windowMs)}: ${value === null ? 'no attempts' : percent(value)} (fires above ${percent(rule.above)}, from ${rule.minAttempts} attempts)`;
    case 'deadJobs':
      return `${value ?? 0} job(s)${scope} dead within ${spellDuration(rule.windowMs)} (fires above ${rule.above})`;
    case 'stuckQueue':
      return `oldest due job${rule.queue ? ` in queue ${rule.queue}` : ''}: ${value === null ? 'none due' : `waiting ${spellDuration(value)}`} (fires above ${spellDuration(rule.maxAgeMs)})`;
    case 'unhandled':
      return `${value ?? 0} due job(s)${scope} that no live worker handles`;
  }
}

function percent(ratio: number): string {
  return `${Math.round(ratio * 1000) / 10} %`;
}

/** A duration as people write it: 5m, 1h, 90s, 250ms. */
export function spellDuration(ms: number | null): string {
  if (ms === null) return '-';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms >= 1_000 ? `${Math.round(ms / 100) / 10}s` : `${ms}ms`;
}
