/**
 * The alert evaluator: every interval (jittered) it takes, or keeps, the cluster's lock
 * `leasehold:alerts`, so one process evaluates at a time; the holder measures with a handful of
 * queries (one per distinct window, however many rules), decides in core (core/alerts.ts), and
 * performs each move as `alerts.transition`, a compare-and-set on the rule's episode. Only a move
 * that landed notifies, so two evaluators that ever run at once (a holder paused past its lock)
 * still notify once. Notifications go to the log, a callback and webhooks; a webhook delivery
 * is a leasehold job under a key per (rule, episode, URL), and every evaluation enqueues the
 * recent notifications again, so a crash between a transition and its enqueue is healed.
 */
import type { AlertMemo, AlertNotification, AlertRule, AlertRuleSpec, AlertStateRow } from '../core/index.js';
import { ValidationError, alertNotification, alertWindows, decideAlerts, normalizeAlertRules, notifies } from '../core/index.js';
import type { Storage } from '../core/storage.js';
import { alertWebhookJob, checkWebhooks, webhookItems } from './alert-webhook.js';
import { Client, findUnhandled } from './client.js';
import type { Logger } from './env.js';
import { defaultLogger } from './env.js';
import type { Lock } from './locks.js';
import { Locks } from './locks.js';
import { Ticker } from './ticker.js';

/** The lock whose holder evaluates the alert rules. */
export const ALERTS_LOCK = 'leasehold:alerts';

/** The Worker's `alerts` option: the rules and where their notifications go. */
export interface AlertOptions {
  /** the rules to evaluate, each with a unique name */
  rules: readonly AlertRule[];
  /** POST each notification to these URLs, as a leasehold job of type `leasehold.alert.webhook` (a worker registers it) */
  webhooks?: readonly string[];
  /** called with each notification once its transition landed; should return soon (a failure is logged) */
  onAlert?: (notification: AlertNotification) => void | Promise<void>;
  /** how often rules are evaluated (default 30 s, ±20 % jitter) */
  intervalMs?: number;
  /** the queue of the webhook jobs (default: the worker's first queue, else 'default') */
  queue?: string;
  /** workers heard from within this long count as live for `unhandled` rules (default 60 s) */
  liveWithinMs?: number;
}

/** Options for an {@link AlertEvaluator} run on its own, outside a Worker. */
export interface AlertEvaluatorOptions extends AlertOptions {
  /** where the rules' measurements, states and webhook jobs live */
  storage: Storage;
  /** where notifications and errors are logged (default: a pino logger) */
  logger?: Logger;
  /** source of randomness for the interval's jitter, in [0, 1) (default `Math.random`) */
  random?: () => number;
  /** shown as the lock's holder (default host:pid) */
  owner?: string;
}

/** Evaluates alert rules on an interval, one process of the cluster at a time; a Worker with `alerts` runs one. */
export class AlertEvaluator {
  readonly #storage: Storage;
  readonly #rules: AlertRuleSpec[];
  readonly #byName: Map<string, AlertRuleSpec>;
  readonly #webhooks: string[];
  readonly #opts: AlertEvaluatorOptions;
  readonly #intervalMs: number;
  /** the lock outlives a few missed evaluations; a holder that died is replaced after it */
  readonly #lockTtlMs: number;
  /** how far back notifications are enqueued again: past any lock handover, well inside retention */
  readonly #healWindowMs: number;
  readonly #locks: Locks;
  readonly #client: Client;
  readonly #random: () => number;
  /** its logger (the `logger` option or a default one) */
  readonly log: Logger;
  #memo: ReadonlyMap<string, AlertMemo> = new Map();
  #lock: Lock | null = null;
  readonly #ticker: Ticker;
  #failing = false;
  #ticking: Promise<void> | null = null;

  constructor(opts: AlertEvaluatorOptions) {
    this.#opts = opts;
    this.#storage = opts.storage;
    this.#rules = normalizeAlertRules(opts.rules);
    this.#byName = new Map(this.#rules.map((r) => [r.name, r]));
    this.#webhooks = checkWebhooks(opts.webhooks ?? []);
    this.#intervalMs = opts.intervalMs ?? 30_000;
    if (!Number.isInteger(this.#intervalMs) || this.#intervalMs < 10) throw new ValidationError('INVALID_OPTION', `alerts intervalMs must be an integer >= 10; got ${String(opts.intervalMs)}`);
    this.#lockTtlMs = Math.max(3 * this.#intervalMs, 10_000);
    this.#healWindowMs = Math.max(10 * this.#intervalMs, 2 * this.#lockTtlMs);
    this.#locks = new Locks(this.#storage, opts.owner === undefined ? {} : { owner: opts.owner });
    // the webhook job's own policies (attempts, timeout) apply to what is enqueued
    this.#client = new Client({ storage: this.#storage, jobs: [alertWebhookJob] });
    this.#random = opts.random ?? Math.random;
    this.#ticker = new Ticker(this.#intervalMs, this.#random, () => this.tick());
    this.log = opts.logger ?? defaultLogger();
  }

  /** the rules, validated and with their defaults filled in */
  get rules(): readonly AlertRuleSpec[] {
    return this.#rules;
  }

  /** Start evaluating every `intervalMs`. */
  start(): void {
    this.#ticker.start();
  }

  /** Stop ticking, wait for an evaluation under way, and hand the lock on. */
  async stop(): Promise<void> {
    this.#ticker.stop();
    await this.#ticking;
    const lock = this.#lock;
    this.#lock = null;
    if (lock) await this.#locks.release(lock).catch(() => false);
  }

  /** Keep or take the lock; evaluate when held. Never throws. */
  tick(): Promise<void> {
    this.#ticking ??= this.#tick().finally(() => (this.#ticking = null));
    return this.#ticking;
  }

  async #tick(): Promise<void> {
    try {
      if (this.#lock && !(await this.#locks.extend(this.#lock))) this.#lock = null;
      this.#lock ??= await this.#locks.tryAcquire(ALERTS_LOCK, { ttlMs: this.#lockTtlMs });
      if (!this.#lock) {
        // another process evaluates; what this one remembered is stale by the time it takes over
        this.#memo = new Map();
        this.log.debug({ event: 'alerts.standby' }, 'another process evaluates the alert rules');
      } else {
        const notified = await this.evaluate();
        this.log.debug({ event: 'alerts.evaluated', notified: notified.length }, 'alert rules evaluated');
      }
      if (this.#failing) this.log.info({ event: 'alerts.recovered' }, 'alert evaluation reaches the database again');
      this.#failing = false;
    } catch (e) {
      if (!this.#failing) this.log.error({ event: 'alerts.failed', err: (e as Error).message }, 'alert evaluation failed; will retry');
      this.#failing = true;
    }
  }

  /**
   * One evaluation, whether or not this process holds the lock (tick() checks that): measure,
   * decide, move, notify. Returns the notifications whose transition this call landed.
   */
  async evaluate(): Promise<AlertNotification[]> {
    const rules = this.#rules;
    const windows = alertWindows(rules);
    const wants = (kind: AlertRuleSpec['kind']) => rules.some((r) => r.kind === kind);
    const [now, states, outcomes, health, unhandled] = await Promise.all([
      this.#storage.now(),
      this.#storage.alerts.list(),
      Promise.all(windows.map((sinceMs) => this.#storage.attempts.outcomes({ sinceMs }))),
      wants('stuckQueue') ? this.#storage.queues.health() : [],
      wants('unhandled') ? this.#unhandled() : [],
    ]);
    const measured = { nowMs: now.getTime(), outcomes: new Map(windows.map((w, i) => [w, outcomes[i] ?? []])), health, unhandled };
    const decision = decideAlerts(rules, measured, states, this.#memo);
    this.#memo = decision.memo;
    const rows = new Map(states.map((s) => [s.rule, s]));
    const notified: AlertNotification[] = [];
    for (const t of decision.transitions) {
      const moved = await this.#storage.alerts.transition(t);
      // null: another evaluator moved this rule first, and notifies for it
      if (!moved) continue;
      rows.set(moved.rule, moved);
      notified.push(alertNotification(this.#byName.get(moved.rule) as AlertRuleSpec, moved));
    }
    for (const n of notified) await this.#announce(n);
    await this.#enqueueWebhooks([...rows.values()], measured.nowMs);
    return notified;
  }

  async #unhandled() {
    const [due, workers, now] = await Promise.all([this.#storage.queues.dueCounts(), this.#storage.workers.list(), this.#storage.now()]);
    return findUnhandled(due.counts, workers, now, this.#opts.liveWithinMs ?? 60_000);
  }

  /** The log line and the callback: once per landed transition, in this process. */
  async #announce(n: AlertNotification): Promise<void> {
    const line = { event: `alert.${n.state}`, rule: n.rule, kind: n.kind, episode: n.episode, value: n.value, since: n.since };
    if (n.state === 'firing') this.log.warn(line, n.summary);
    else this.log.info(line, n.summary);
    try {
      await this.#opts.onAlert?.(n);
    } catch (e) {
      this.log.error({ event: 'alert.callback_failed', rule: n.rule, episode: n.episode, err: (e as Error).message }, 'the onAlert callback failed');
    }
  }

  /** The webhook jobs of every recent notification: new ones are written, the others are found by key. */
  async #enqueueWebhooks(rows: readonly AlertStateRow[], nowMs: number): Promise<void> {
    if (this.#webhooks.length === 0) return;
    const queue = this.#opts.queue ?? 'default';
    const items = rows
      .filter((r) => this.#byName.has(r.rule) && notifies(r) && nowMs - r.since.getTime() <= this.#healWindowMs)
      .flatMap((r) => webhookItems(alertNotification(this.#byName.get(r.rule) as AlertRuleSpec, r), this.#webhooks, queue));
    if (items.length > 0) await this.#client.enqueueMany(items);
  }
}
