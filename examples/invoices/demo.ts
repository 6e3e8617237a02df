/**
 * `npm run demo`: the whole lifecycle on the embedded SQLite default — a worker, the scheduler
 * and the dashboard on the example app.
 *
 * Creates ./demo/leasehold.db, enqueues 30 invoice emails (some flaky, one that bounces until it
 * is dead, one duplicate), a report, and declares an every-2-seconds cleanup schedule. Runs a
 * worker (with its scheduler and sweeper) until the invoices are through, prints what happened,
 * then keeps running with the dashboard on http://127.0.0.1:8080 until Ctrl-C.
 * `npm run demo -- --once` stops after the summary (CI runs it that way).
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { serveDashboard, withOperatorApi } from '../../src/dashboard/index.js';
import { Worker, createClient, openStorage } from '../../src/index.js';
import { jobs } from './handlers.js';

const once = process.argv.includes('--once');
const dir = path.resolve(process.env.DEMO_DIR ?? 'demo');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
process.env.OUTBOX = path.join(dir, 'outbox.log');
const dbFile = path.join(dir, 'leasehold.db');

const storage = await openStorage(`sqlite:${dbFile}`);
await storage.migrate();
const client = createClient({ storage, jobs });

for (let i = 1; i <= 30; i++) {
  const invoiceId = `INV-${String(i).padStart(4, '0')}`;
  // every 6th invoice fails twice before it goes through; INV-0013 never does and ends dead
  const flaky = i === 13 ? { flaky: 99 } : i % 6 === 0 ? { flaky: 2 } : {};
  await client.enqueue('send-invoice-email', { invoiceId, to: `customer${i}@example.com`, amountCents: 1000 * i, ...flaky }, { idempotencyKey: `invoice:${invoiceId}` });
}
const dup = await client.enqueue('send-invoice-email', { invoiceId: 'INV-0001', to: 'customer1@example.com', amountCents: 1000 }, { idempotencyKey: 'invoice:INV-0001' });
await client.enqueue('daily-report', { day: new Date().toISOString().slice(0, 10) }, { delayMs: 1_000 });
console.log(`enqueued 31 jobs (a second enqueue of INV-0001 returned job ${dup.id}: created=${dup.created})`);

// declared in code: its type and payload are checked against the job list, here and at compile time
await client.syncSchedules([{ name: 'outbox-cleanup', type: 'cleanup', everyMs: 2_000, payload: { keepLast: 1000 } }]);

const logger = pino({ level: process.env.LEASEHOLD_LOG_LEVEL ?? 'warn' });
const worker = new Worker({ storage, jobs, concurrency: 5, pollIntervalMs: 100, logger });
await worker.start();

// Until every invoice and the report are settled and the schedule has fired at least once.
const started = Date.now();
const settled = async () => {
  const counts = await client.countJobs();
  const open = counts.filter((c) => c.type !== 'cleanup' && !['succeeded', 'dead', 'cancelled'].includes(c.status)).reduce((a, c) => a + c.count, 0);
  const cleanups = counts.filter((c) => c.type === 'cleanup' && c.status === 'succeeded').reduce((a, c) => a + c.count, 0);
  return open === 0 && cleanups > 0;
};
while (!(await settled()) && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 200));

const byStatus: Record<string, number> = {};
for (const c of await client.countJobs()) if (c.type !== 'cleanup') byStatus[c.status] = (byStatus[c.status] ?? 0) + c.count;
const cleanupJobs = await client.listJobs({ type: 'cleanup', limit: 100 });
const emails = readFileSync(process.env.OUTBOX, 'utf8').split('\n').filter(Boolean).length;
console.log(`invoice and report jobs by status: ${JSON.stringify(byStatus)}`);
console.log(`emails in the outbox: ${emails}; effect ledger entries: ${(await client.listEffects({ limit: 1000 })).length}`);
console.log(`schedule outbox-cleanup (every 2 s) enqueued ${cleanupJobs.length} job(s) so far, each for its own slot: ${cleanupJobs.map((j) => j.slotAt?.toISOString().slice(11, 19)).join(', ')}`);
const flaky = (await client.listJobs({ type: 'send-invoice-email', limit: 100 })).find((j) => j.attempts > 1 && j.status === 'succeeded');
if (flaky) {
  console.log(`job ${flaky.id} (${JSON.stringify(flaky.payload)}) needed ${flaky.attempts} attempts:`);
  for (const a of await client.listAttempts(flaky.id)) {
    console.log(`  #${a.attempt} ${a.outcome}${a.errorMessage ? ` — ${a.errorMessage}` : ''}${a.retryDelayMs !== null ? ` (retry in ${a.retryDelayMs} ms)` : ''}`);
  }
}
const ok = emails === 29 && byStatus.succeeded === 30 && byStatus.dead === 1 && cleanupJobs.length > 0;
if (!ok) process.exitCode = 1;

if (once || !ok) {
  await worker.stop({ deadlineMs: 5_000 });
  await storage.close();
  console.log(`\nThe database is ${dbFile}. Look around with:\n  npx leasehold --db sqlite:${path.relative(process.cwd(), dbFile)} jobs list`);
} else {
  const token = process.env.LEASEHOLD_DASHBOARD_TOKEN || undefined;
  const dash = await serveDashboard({ client: withOperatorApi(client), port: Number(process.env.PORT ?? 8080), host: '127.0.0.1', token });
  console.log(`\ndashboard: ${dash.url}  (the dead invoice is under "Dead": retry it from its page)`);
  console.log(`CLI: npx leasehold --db sqlite:${path.relative(process.cwd(), dbFile)} jobs list`);
  console.log('the worker and the scheduler keep running; Ctrl-C to stop');
  let stopping = false;
  const stop = async () => {
    if (stopping) process.exit(130);
    stopping = true;
    await dash.close();
    await worker.stop({ deadlineMs: 5_000 });
    await storage.close();
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
