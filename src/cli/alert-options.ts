/**
 * Alert rules from the command line: `--alert <spec>` and `--alert-webhook <url>` (both
 * repeatable), `--alerts-file <json>`, `--alert-interval <duration>`. A spec is
 * `<kind>[:key=value,…]`:
 *
 *   failure-rate:window=5m,above=0.2[,type=…][,queue=…][,min-attempts=5]   (above: a ratio or 20%)
 *   dead:window=1h[,above=0][,type=…][,queue=…]
 *   stuck:age=10m[,queue=…]
 *   unhandled[:type=…][,queue=…]
 *
 * Every kind also takes `name=…`, `for=<duration>` and `keep-firing-for=<duration>`. The file is
 * JSON: `{ "rules": [spec or rule object, …], "webhooks": [url, …], "interval": "30s" }`.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';
import type { AlertRule } from '../core/index.js';
import { ValidationError, normalizeAlertRules } from '../core/index.js';
import type { AlertOptions } from '../runtime/alert-evaluator.js';
import { checkWebhooks } from '../runtime/alert-webhook.js';
import { parseDuration } from './parse.js';

export interface AlertFlags {
  alert?: AlertRule[];
  alertWebhook?: string[];
  alertsFile?: string;
  alertInterval?: number;
}

const KINDS: Record<string, { kind: AlertRule['kind']; keys: readonly string[]; required: readonly string[] }> = {
  'failure-rate': { kind: 'failureRate', keys: ['type', 'queue', 'window', 'above', 'min-attempts'], required: ['window', 'above'] },
  dead: { kind: 'deadJobs', keys: ['type', 'queue', 'window', 'above'], required: ['window'] },
  stuck: { kind: 'stuckQueue', keys: ['queue', 'age'], required: ['age'] },
  unhandled: { kind: 'unhandled', keys: ['type', 'queue'], required: [] },
};
const COMMON = ['name', 'for', 'keep-firing-for'];

/** One `--alert` spec as a rule; a bad one throws InvalidArgumentError saying what was expected. */
export function parseAlertSpec(text: string): AlertRule {
  const [head = '', ...rest] = text.trim().split(':');
  const spec = KINDS[head];
  if (!spec) throw new InvalidArgumentError(`expected an alert like failure-rate:window=5m,above=0.2 (kinds: ${Object.keys(KINDS).join(', ')}); got "${text}"`);
  const body = rest.join(':');
  const fields = new Map<string, string>();
  for (const pair of body === '' ? [] : body.split(',')) {
    const m = /^\s*([a-z-]+)\s*=\s*(.*?)\s*$/.exec(pair);
    if (!m || !m[2]) throw new InvalidArgumentError(`${head}: expected key=value, got "${pair}"`);
    const [, key = '', value] = m;
    if (!spec.keys.includes(key) && !COMMON.includes(key)) throw new InvalidArgumentError(`${head} takes ${[...spec.keys, ...COMMON].join(', ')}; not "${key}"`);
    if (fields.has(key)) throw new InvalidArgumentError(`${head}: ${key} given twice`);
    fields.set(key, value);
  }
  const missing = spec.required.filter((k) => !fields.has(k));
  if (missing.length > 0) throw new InvalidArgumentError(`${head} needs ${missing.map((k) => `${k}=…`).join(' and ')}; got "${text}"`);
  const rule: Record<string, unknown> = { kind: spec.kind };
  for (const [key, value] of fields) {
    const at = `${head}: ${key}`;
    if (key === 'window') rule.windowMs = duration(at, value);
    else if (key === 'age') rule.maxAgeMs = duration(at, value);
    else if (key === 'for') rule.forMs = duration(at, value);
    else if (key === 'keep-firing-for') rule.keepFiringForMs = duration(at, value);
    else if (key === 'above') rule.above = threshold(at, value);
    else if (key === 'min-attempts') rule.minAttempts = number(at, value);
    else rule[key] = value;
  }
  const parsed = rule as unknown as AlertRule;
  try {
    normalizeAlertRules([parsed]);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
  return parsed;
}

function duration(at: string, text: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    throw new InvalidArgumentError(`${at}: ${(e as Error).message}`);
  }
}

function number(at: string, text: string): number {
  if (!/^\d+(\.\d+)?$/.test(text)) throw new InvalidArgumentError(`${at}: expected a number; got "${text}"`);
  return Number(text);
}

/** A ratio (0.2) or a percentage (20%). */
function threshold(at: string, text: string): number {
  return text.endsWith('%') ? number(at, text.slice(0, -1)) / 100 : number(at, text);
}

function webhookFlag(text: string, previous: string[] = []): string[] {
  try {
    return [...previous, ...checkWebhooks([text])];
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

/** The alert flags, on `worker` and `tick`. */
export function addAlertOptions(cmd: Command): Command {
  return cmd
    .option('--alert <spec>', 'an alert rule, repeatable: failure-rate:window=5m,above=0.2 | dead:window=1h | stuck:age=10m | unhandled (see docs/operations.md)', (v: string, prev: AlertRule[] = []) => [...prev, parseAlertSpec(v)])
    .option('--alert-webhook <url>', 'POST alert notifications here (repeatable), delivered as jobs', webhookFlag)
    .addOption(new Option('--alerts-file <json>', 'alert rules and webhooks from a JSON file').env('LEASEHOLD_ALERTS_FILE'))
    .option('--alert-interval <duration>', 'how often alert rules are evaluated (default 30s)', parseDuration);
}

/** The worker's `alerts` option from the flags and the file; undefined when no rule is given. */
export async function alertOptionsFrom(flags: AlertFlags): Promise<AlertOptions | undefined> {
  const file = flags.alertsFile === undefined ? {} : await readAlertsFile(flags.alertsFile);
  const rules = [...(file.rules ?? []), ...(flags.alert ?? [])];
  const webhooks = [...(file.webhooks ?? []), ...(flags.alertWebhook ?? [])];
  const intervalMs = flags.alertInterval ?? file.intervalMs;
  if (rules.length === 0) {
    if (webhooks.length > 0) throw new ValidationError('INVALID_OPTION', 'alert webhooks were given but no alert rule: add --alert (or "rules" in --alerts-file)');
    return undefined;
  }
  normalizeAlertRules(rules);
  return { rules, webhooks, ...(intervalMs === undefined ? {} : { intervalMs }) };
}

async function readAlertsFile(path: string): Promise<{ rules?: AlertRule[]; webhooks?: string[]; intervalMs?: number }> {
  const bad = (why: string): never => {
    throw new ValidationError('INVALID_OPTION', `--alerts-file ${path}: ${why}`);
  };
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    bad((e as Error).message);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return bad('expected a JSON object with "rules", "webhooks" and "interval"');
  const { rules = [], webhooks = [], interval, ...rest } = data as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) bad(`unknown key(s) ${unknown.join(', ')} (expected rules, webhooks, interval)`);
  if (!Array.isArray(rules) || !Array.isArray(webhooks) || !webhooks.every((w) => typeof w === 'string')) bad('"rules" and "webhooks" must be arrays ("webhooks" of URLs)');
  try {
    const parsed = (rules as unknown[]).map((r) => (typeof r === 'string' ? parseAlertSpec(r) : (r as AlertRule)));
    normalizeAlertRules(parsed);
    return {
      rules: parsed,
      webhooks: checkWebhooks(webhooks as string[]),
      ...(interval === undefined ? {} : { intervalMs: typeof interval === 'number' ? interval : parseDuration(String(interval)) }),
    };
  } catch (e) {
    return bad((e as Error).message);
  }
}
