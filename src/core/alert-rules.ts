/**
 * Alert rules as written and as checked, and the notification a move sends: the types the
 * decisions in ./alerts.ts work on. Types and constants only.
 */
import type { AttemptOutcomeCount, QueueHealth } from './storage.js';

/** The kinds of alert rule. */
export const ALERT_KINDS = ['failureRate', 'deadJobs', 'stuckQueue', 'unhandled'] as const;
/** One of {@link ALERT_KINDS}. */
export type AlertKind = (typeof ALERT_KINDS)[number];

/** The job type that delivers webhook notifications; rules without a `type` leave it out, so a failing receiver does not feed an alert of its own. */
export const ALERT_WEBHOOK_TYPE = 'leasehold.alert.webhook';

/** What every alert rule may set besides its kind and condition. */
export interface AlertRuleBase {
  /** the rule's row and its notifications' key (default: its kind and target, e.g. `failure-rate:type:email`) */
  name?: string;
  /** the condition must hold this long before the rule fires (default 0: at the first evaluation) */
  forMs?: number;
  /** once firing, the condition must be clear this long before the rule resolves (default 0) */
  keepFiringForMs?: number;
}

/** A rule as written in code or a config file. */
export type AlertRule =
  /** failed / (failed + succeeded) attempts over the window above a ratio (0 ≤ above < 1), once there were minAttempts (default 5) */
  | (AlertRuleBase & {
    /** the failed share of attempts */
    kind: 'failureRate';
    /** only jobs of this type (default: every type but the webhook job's) */
    type?: string;
    /** only jobs of this queue (default: every queue) */
    queue?: string;
    /** how far back attempts are counted, in ms */
    windowMs: number;
    /** the ratio it fires above, from 0 to below 1 (0.2: 20 %) */
    above: number;
    /** fewer attempts in the window never fire (default 5) */
    minAttempts?: number;
  })
  /** more than `above` (default 0) attempts ended their job as dead within the window */
  | (AlertRuleBase & {
    /** jobs that went dead */
    kind: 'deadJobs';
    /** only jobs of this type (default: every type but the webhook job's) */
    type?: string;
    /** only jobs of this queue (default: every queue) */
    queue?: string;
    /** how far back attempts are counted, in ms */
    windowMs: number;
    /** the count it fires above (default 0) */
    above?: number;
  })
  /** the oldest due job of the queue (of any queue when none is named) has waited longer than maxAgeMs */
  | (AlertRuleBase & {
    /** the age of the oldest due job */
    kind: 'stuckQueue';
    /** the queue to watch (default: every queue) */
    queue?: string;
    /** the wait it fires above, in ms */
    maxAgeMs: number;
  })
  /** due jobs that no live worker has a handler for (its type, in its queue) */
  | (AlertRuleBase & {
    /** due jobs no live worker handles */
    kind: 'unhandled';
    /** only jobs of this type (default: every type but the webhook job's) */
    type?: string;
    /** only jobs of this queue (default: every queue) */
    queue?: string;
  });

/** A rule checked and defaulted (normalizeAlertRules). */
export interface AlertRuleSpec {
  /** unique among the rules */
  name: string;
  /** what it measures */
  kind: AlertKind;
  /** the job type it watches, or null for all */
  type: string | null;
  /** the queue it watches, or null for all */
  queue: string | null;
  /** failureRate, deadJobs: the window counted back from now */
  windowMs: number | null;
  /** failureRate: a ratio; deadJobs: a count */
  above: number;
  /** failureRate: fewer attempts never fire */
  minAttempts: number;
  /** stuckQueue */
  maxAgeMs: number | null;
  /** how long the condition holds before it fires, in ms */
  forMs: number;
  /** how long the condition is clear before it resolves, in ms */
  keepFiringForMs: number;
}

/** What one evaluation measured, with the database's clock. */
export interface AlertMeasurements {
  nowMs: number;
  /** ended attempts by window length (one `attempts.outcomes` per distinct window) */
  outcomes: ReadonlyMap<number, readonly AttemptOutcomeCount[]>;
  health: readonly QueueHealth[];
  /** due jobs by (type, queue) that no live worker handles */
  unhandled: readonly { type: string; queue: string; due: number }[];
}

/** Per rule, remembered by one evaluator between evaluations for forMs / keepFiringForMs. */
export interface AlertMemo {
  heldSince: number | null;
  clearSince: number | null;
}

export interface AlertCheck {
  rule: AlertRuleSpec;
  /** the rule may fire */
  holds: boolean;
  /** a firing rule may resolve: not holding, except that a failure rate needs no minAttempts to keep firing */
  clears: boolean;
  value: number | null;
}

/** What one notification says: the same for every delivery of it. */
export interface AlertNotification {
  /** `<rule>#<episode>`: receivers may drop a repeat delivery by it */
  id: string;
  /** the rule's name */
  rule: string;
  /** the rule's kind */
  kind: AlertKind;
  /** whether the rule began or stopped firing */
  state: 'firing' | 'resolved';
  /** what was measured (a ratio, a count or an age in ms), when there is one */
  value: number | null;
  /** when this state began (ISO 8601, database clock) */
  since: string;
  /** counts the rule's state changes; with `rule`, it names this one */
  episode: number;
  /** one line for people, e.g. for a chat message */
  summary: string;
}
