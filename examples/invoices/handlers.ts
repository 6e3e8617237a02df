/**
 * The example app's job types, from the pattern's own story: invoice emails that must go out
 * exactly once, a cleanup job, and a report job. `leasehold worker --handlers` loads this file.
 *
 * The "mail provider" is a file (OUTBOX, default ./outbox.log): one line per email sent. It is
 * flaky on purpose: invoices with `flaky: n` fail their first n attempts, so you can watch the
 * retries and backoff in `leasehold jobs show <id>`.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { defineJob, fail } from '../../src/index.js';

const outbox = () => process.env.OUTBOX ?? 'outbox.log';

export const sendInvoiceEmail = defineJob({
  type: 'send-invoice-email',
  schema: z.object({ invoiceId: z.string().min(1), to: z.string().email(), amountCents: z.number().int().nonnegative(), flaky: z.number().int().min(0).optional() }),
  retry: { kind: 'exponential', baseMs: 200, factor: 2, maxMs: 5_000, jitter: 'equal' },
  maxAttempts: 5,
  async handler(invoice, ctx) {
    if (invoice.flaky !== undefined && ctx.attempt <= invoice.flaky) {
      throw new Error(`mail provider unavailable (attempt ${ctx.attempt} of invoice ${invoice.invoiceId})`);
    }
    // The effect ledger: even if this job runs again (crash after sending, lease expiry),
    // the email for this invoice is sent once.
    const messageId = await ctx.once(`invoice-email:${invoice.invoiceId}`, () => {
      const id = `msg-${invoice.invoiceId}-${Date.now()}`;
      appendFileSync(outbox(), `${JSON.stringify({ messageId: id, invoiceId: invoice.invoiceId, to: invoice.to, amountCents: invoice.amountCents })}\n`);
      return id;
    });
    ctx.log.info({ invoiceId: invoice.invoiceId, messageId }, 'invoice email sent');
  },
});

export const cleanup = defineJob({
  type: 'cleanup',
  schema: z.object({ keepLast: z.number().int().positive().default(1000) }),
  maxAttempts: 3,
  handler(p, ctx) {
    if (!existsSync(outbox())) return;
    const lines = readFileSync(outbox(), 'utf8').split('\n').filter(Boolean);
    if (lines.length > p.keepLast) writeFileSync(outbox(), `${lines.slice(-p.keepLast).join('\n')}\n`);
    ctx.log.info({ kept: Math.min(lines.length, p.keepLast), dropped: Math.max(0, lines.length - p.keepLast) }, 'outbox cleaned');
  },
});

export const dailyReport = defineJob({
  type: 'daily-report',
  schema: z.object({ day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }),
  async handler(p, ctx) {
    if (ctx.signal.aborted) return fail('aborted before start');
    const sent = existsSync(outbox()) ? readFileSync(outbox(), 'utf8').split('\n').filter(Boolean).length : 0;
    await ctx.once(`daily-report:${p.day}`, () => ({ day: p.day, emailsSent: sent }));
    ctx.log.info({ day: p.day, emailsSent: sent }, 'daily report written');
  },
});

export const jobs = [sendInvoiceEmail, cleanup, dailyReport];
