// The README's hello world (CI runs it): one job type, one job, one worker, on SQLite.
import { Worker, createClient, defineJob, openStorage } from '../../src/index.js';

const hello = defineJob({
  type: 'hello',
  handler: async (p: { name: string }, ctx) => {
    await ctx.once(`greet:${ctx.job.id}`, () => console.log(`hello, ${p.name}!`));
  },
});
const jobs = [hello];

const storage = await openStorage(process.env.LEASEHOLD_DB ?? 'sqlite:hello.db');
await storage.migrate();
await createClient({ storage, jobs }).enqueue('hello', { name: 'world' });
const report = await new Worker({ storage, jobs, logger: (await import('pino')).pino({ level: 'warn' }) }).drain({ maxMs: 10_000 });
console.log(`processed ${report.processed} job(s): ${JSON.stringify(report.outcomes)}`);
await storage.close();
