/**
 * `npm run demo:serve`: a worker and the web dashboard on the demo database, until Ctrl-C.
 * Uses ./demo/leasehold.db (DEMO_DIR to change it; run `npm run demo` first to fill it, or let
 * this script add a few invoices). Open the printed URL: one invoice bounces until it is dead;
 * retry it from its page and watch it fail again with a fresh attempt history.
 * PORT (default 8080) and LEASEHOLD_DASHBOARD_TOKEN are honoured; it listens on 127.0.0.1 only.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { serveDashboard } from '../../src/dashboard/index.js';
import { Worker, createClient, openStorage } from '../../src/index.js';
import { jobs } from './handlers.js';

const dir = path.resolve(process.env.DEMO_DIR ?? 'demo');
mkdirSync(dir, { recursive: true });
process.env.OUTBOX ??= path.join(dir, 'outbox.log');

const storage = await openStorage(`sqlite:${path.join(dir, 'leasehold.db')}`);
await storage.migrate();
const client = createClient({ storage, jobs });

if ((await client.listJobs({ limit: 1 })).length === 0) {
  for (let i = 1; i <= 12; i++) {
    const invoiceId = `INV-${String(i).padStart(4, '0')}`;
    // INV-0004 retries twice then succeeds; INV-0009 never gets through and ends dead
    const flaky = i === 4 ? { flaky: 2 } : i === 9 ? { flaky: 99 } : {};
    await client.enqueue('send-invoice-email', { invoiceId, to: `customer${i}@example.com`, amountCents: 1250 * i, ...flaky }, { idempotencyKey: `invoice:${invoiceId}` });
  }
  await client.enqueue('daily-report', { day: new Date().toISOString().slice(0, 10) }, { delayMs: 2_000 });
  console.log('the demo database was empty: enqueued 12 invoice emails and a report');
}

const logger = pino({ level: process.env.LEASEHOLD_LOG_LEVEL ?? 'warn' });
const worker = new Worker({ storage, jobs, concurrency: 4, pollIntervalMs: 200, logger });
await worker.start();
const token = process.env.LEASEHOLD_DASHBOARD_TOKEN || undefined;
const dash = await serveDashboard({ client, port: Number(process.env.PORT ?? 8080), host: '127.0.0.1', token });
console.log(`dashboard: ${dash.url}${token ? ' (sign in with LEASEHOLD_DASHBOARD_TOKEN)' : ''}\nworker running; Ctrl-C to stop`);

let stopping = false;
const stop = async () => {
  if (stopping) process.exit(130);
  stopping = true;
  console.log('\nstopping…');
  await dash.close();
  await worker.stop({ deadlineMs: 5_000 });
  await storage.close();
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
