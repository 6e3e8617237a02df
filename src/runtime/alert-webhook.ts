/**
 * Webhook delivery of alert notifications as leasehold jobs of the built-in type
 * `leasehold.alert.webhook`: a POST that fails is retried with backoff, and every try is in the
 * job's history. One job per (notification, URL) under an idempotency key, so a notification
 * enqueued again (the evaluator heals a crash between a transition and its enqueue by enqueuing
 * recent notifications at every evaluation) is delivered once.
 */
import { createHash } from 'node:crypto';
import type { AlertNotification } from '../core/index.js';
import { ALERT_WEBHOOK_TYPE, ValidationError, fail } from '../core/index.js';
import type { EnqueueItem } from './client.js';
import type { AnyJobDefinition, JobDefinition } from './job-definition.js';
import { JobRegistry, defineJob } from './job-definition.js';
import { VERSION } from './version.js';

/** The payload of a `leasehold.alert.webhook` job: one notification for one URL. */
export interface AlertWebhookPayload {
  /** where the notification is POSTed */
  url: string;
  /** the body, sent as JSON */
  notification: AlertNotification;
}

/** statuses a later try may fix: anything else in 4xx is a receiver that refuses, so the job is dead at once */
const RETRYABLE_4XX = new Set([408, 425, 429]);

/** The built-in job that POSTs one notification as JSON; a non-2xx answer fails the attempt. */
export const alertWebhookJob: JobDefinition<AlertWebhookPayload> = defineJob<AlertWebhookPayload>({
  type: ALERT_WEBHOOK_TYPE,
  maxAttempts: 12,
  timeoutMs: 30_000,
  handler: async ({ url, notification }, ctx) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': `leasehold/${VERSION}` },
      body: JSON.stringify(notification),
      signal: ctx.signal,
    });
    // read the answer to the end, so the connection can be reused, and keep a little for the history
    const text = (await res.text().catch(() => '')).slice(0, 200);
    if (res.ok) return;
    const why = `webhook ${redact(url)} answered ${res.status}${text ? `: ${text}` : ''}`;
    if (res.status >= 400 && res.status < 500 && !RETRYABLE_4XX.has(res.status)) return fail(why);
    throw Object.assign(new Error(why), { code: `HTTP_${res.status}` });
  },
});

/** A URL without its credentials or query (a token often rides there), for messages. */
function redact(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/** Webhook URLs checked up front: absolute http(s) only. */
export function checkWebhooks(urls: readonly string[]): string[] {
  return urls.map((url) => {
    let u: URL | null = null;
    try {
      u = new URL(url);
    } catch {
      u = null;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw new ValidationError('INVALID_OPTION', `an alert webhook must be an http(s) URL; got ${JSON.stringify(url)}`);
    return url;
  });
}

/** The enqueue of one notification to each URL; the key makes a second enqueue of it a no-op. */
export function webhookItems(n: AlertNotification, urls: readonly string[], queue: string): EnqueueItem[] {
  return urls.map((url) => ({
    type: ALERT_WEBHOOK_TYPE,
    payload: { url, notification: n } satisfies AlertWebhookPayload,
    options: { queue, idempotencyKey: `alert:${n.rule}:${n.episode}:${createHash('sha256').update(url).digest('hex').slice(0, 16)}` },
  }));
}

/** A worker's job definitions, with the webhook job added when it delivers alerts to webhooks. */
export function withAlertJobs(jobs: readonly AnyJobDefinition[] | JobRegistry, alerts?: { webhooks?: readonly string[] }): JobRegistry {
  const defs = jobs instanceof JobRegistry ? jobs.types.map((t) => jobs.get(t) as AnyJobDefinition) : jobs;
  const add = (alerts?.webhooks?.length ?? 0) > 0 && !defs.some((d) => d.type === ALERT_WEBHOOK_TYPE);
  if (!add) return jobs instanceof JobRegistry ? jobs : new JobRegistry(jobs);
  return new JobRegistry([...defs, alertWebhookJob]);
}
