/**
 * `npm run demo`: the whole lifecycle on the embedded SQLite default, in one process.
 * Creates ./demo/leasehold.db, enqueues 30 invoice emails (some flaky, one duplicate),
 * a cleanup and a report, runs a worker until everything is done, and prints what happened.
 * Afterwards try: npx leasehold --db sqlite:demo/leasehold.db jobs list
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { Worker, createClient, openStorage } from '../../src/index.js';
import { jobs } from './handlers.js';

const dir = path.resolve(process.env.DEMO_DIR ?? 'demo');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
process.env.OUTBOX = path.join(dir, 'outbox.log');

const storage = await openStorage(`sqlite:${path.join(dir, 'leasehold.db')}`);
await storage.migrate();
const client = createClient({ storage, jobs });

for (let i = 1; i <= 30; i++) {
  const invoiceId = `INV-${String(i).padStart(4, '0')}`;
  await client.enqueue(
    'send-invoice-email',
    { invoiceId, to: `customer${i}@example.com`, amountCents: 1000 * i, ...(i % 6 === 0 ? { flaky: 2 } : {}) },
    { idempotencyKey: `invoice:${invoiceId}` },
  );
}
const dup = await client.enqueue('send-invoice-email', { invoiceId: 'INV-0001', to: 'customer1@example.com', amountCents: 1000 }, { idempotencyKey: 'invoice:INV-0001' });
await client.enqueue('cleanup', { keepLast: 1000 }, { delayMs: 500 });
await client.enqueue('daily-report', { day: new Date().toISOString().slice(0, 10) }, { delayMs: 1_000 });
console.log(`enqueued 32 jobs (a second enqueue of INV-0001 returned job ${dup.id}: created=${dup.created})`);

const logger = pino({ level: process.env.LEASEHOLD_LOG_LEVEL ?? 'warn' });
const worker = new Worker({ storage, jobs, concurrency: 5, pollIntervalMs: 100, logger });
await worker.start();
const started = Date.now();
for (;;) {
  const counts = await client.countJobs();
  const open = counts.filter((c) => !['succeeded', 'dead', 'cancelled'].includes(c.status)).reduce((a, c) => a + c.count, 0);
  if (open === 0 || Date.now() - started > 30_000) break;
  await new Promise((r) => setTimeout(r, 200));
}
await worker.stop({ deadlineMs: 5_000 });

const counts = await client.countJobs();
const byStatus: Record<string, number> = {};
for (const c of counts) byStatus[c.status] = (byStatus[c.status] ?? 0) + c.count;
const emails = readFileSync(process.env.OUTBOX, 'utf8').split('\n').filter(Boolean).length;
const flaky = (await client.listJobs({ type: 'send-invoice-email', limit: 100 })).filter((j) => j.attempts > 1);
console.log(`jobs by status: ${JSON.stringify(byStatus)}`);
console.log(`emails in the outbox: ${emails}; effect ledger entries: ${await storage.countEffects()}`);
if (flaky[0]) {
  const attempts = await client.listAttempts(flaky[0].id);
  console.log(`job ${flaky[0].id} (${JSON.stringify(flaky[0].payload)}) needed ${flaky[0].attempts} attempts:`);
  for (const a of attempts) console.log(`  #${a.attempt} ${a.outcome}${a.errorMessage ? ` — ${a.errorMessage}` : ''}${a.retryDelayMs !== null ? ` (retry in ${a.retryDelayMs} ms)` : ''}`);
}
await storage.close();
console.log(`\nThe database is ${path.join(dir, 'leasehold.db')}. Look around with:\n  npx leasehold --db sqlite:${path.relative(process.cwd(), path.join(dir, 'leasehold.db'))} jobs list`);
if (emails !== 30 || byStatus.succeeded !== 32) process.exitCode = 1;
