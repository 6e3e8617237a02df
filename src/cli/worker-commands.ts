/**
 * `leasehold worker` (the daemon) and `leasehold tick` (the crontab mode), plus signal
 * handling: the first SIGTERM/SIGINT stops claiming and drains against the deadline; a
 * second one exits at once (leases then lapse and the sweeper brings the jobs back).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { Option } from 'commander';
import { ValidationError } from '../core/index.js';
import { defaultLogger } from '../runtime/env.js';
import type { AnyJobDefinition } from '../runtime/job-definition.js';
import { Worker } from '../runtime/worker.js';
import { openStorage } from '../storage/open.js';
import { type AlertFlags, addAlertOptions, alertOptionsFrom } from './alert-options.js';
import type { GlobalOpts } from './main.js';
import { type MetricsCliOpts, addMetricsOptions, startMetrics } from './metrics-options.js';
import { parseDuration, parseIntIn, parseList } from './parse.js';
import { type RetentionFlags, addRetentionOptions, pruneOnce, retentionFrom } from './retention-options.js';

/** TypeScript handler modules load through tsx when it is installed (it is not our runtime dependency). */
async function enableTypeScript(modulePath: string): Promise<void> {
  if (!/\.(c|m)?tsx?$/.test(modulePath) || process.execArgv.join(' ').includes('tsx')) return;
  try {
    const api = (await import('tsx/esm/api' as string)) as { register: () => unknown };
    api.register();
  } catch {
    throw new ValidationError('INVALID_OPTION', `${modulePath} is TypeScript: install tsx (npm i -D tsx) or compile it to JavaScript first`);
  }
}

/** A handlers module exports its job definitions as `default` or `jobs` (an array). */
export async function loadHandlers(modulePath: string): Promise<AnyJobDefinition[]> {
  const url = pathToFileURL(path.resolve(modulePath)).href;
  let mod: Record<string, unknown>;
  await enableTypeScript(modulePath);
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
    throw new ValidationError('INVALID_OPTION', `cannot load handlers from ${modulePath}: ${(e as Error).message}`);
  }
  const defs = mod.jobs ?? mod.default;
  if (!Array.isArray(defs) || defs.length === 0) {
    throw new ValidationError('INVALID_OPTION', `${modulePath} must export a non-empty array of job definitions as "jobs" or default`);
  }
  return defs as AnyJobDefinition[];
}

interface RunOpts {
  handlers: string;
  concurrency: number;
  queues?: string[];
  lease: number;
  poll: number;
  shutdownDeadline: number;
}

function addRunOptions(cmd: Command): Command {
  return addRetentionOptions(addAlertOptions(cmd))
    .addOption(new Option('--handlers <module>', 'module exporting job definitions').env('LEASEHOLD_HANDLERS').makeOptionMandatory())
    .option('--concurrency <n>', 'jobs run at once', parseIntIn(1, 1000), 10)
    .option('--queues <list>', 'only these queues (comma-separated)', parseList)
    .option('--lease <duration>', 'lease length, renewed every third of it', parseDuration, 30_000)
    .option('--poll <duration>', 'how often an idle worker looks for due jobs', parseDuration, 1_000)
    .option('--shutdown-deadline <duration>', 'on SIGTERM, how long running jobs may finish before they are handed back', parseDuration, 25_000);
}

async function setUp(cmd: Command, o: RunOpts & MetricsCliOpts) {
  const { db } = cmd.optsWithGlobals<GlobalOpts>();
  const jobs = await loadHandlers(o.handlers);
  const alerts = await alertOptionsFrom(cmd.opts<AlertFlags>());
  const storage = await openStorage(db, { poolSize: Math.min(o.concurrency + 2, 20) });
  await storage.migrate();
  const metrics = await startMetrics(o, storage);
  const worker = new Worker({
    storage,
    jobs,
    concurrency: o.concurrency,
    queues: o.queues ?? null,
    leaseMs: o.lease,
    pollIntervalMs: o.poll,
    shutdownDeadlineMs: o.shutdownDeadline,
    logger: defaultLogger(),
    alerts,
    retention: retentionFrom(cmd.opts<RetentionFlags>()),
    observers: metrics?.observers ?? [],
  });
  metrics?.attach(worker);
  return { storage, worker, metrics };
}

/** First signal: graceful stop against the deadline. Second: exit now. */
function onSignals(first: (signal: string) => void): () => void {
  let seen = 0;
  const handler = (signal: NodeJS.Signals) => {
    seen++;
    if (seen === 1) first(signal);
    else {
      process.stderr.write(`leasehold: second ${signal}; exiting now\n`);
      process.exit(130);
    }
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}

export function registerWorkerCommands(program: Command): void {
  addMetricsOptions(addRunOptions(program.command('worker').description('run a worker pool with its heartbeater and sweeper until SIGTERM/SIGINT'))).action(
    async (o: RunOpts & MetricsCliOpts, cmd: Command) => {
      const { storage, worker, metrics } = await setUp(cmd, o);
      const done = new Promise<void>((resolve) => {
        const off = onSignals((signal) => {
          worker.log.info({ event: 'worker.signal', signal, deadlineMs: o.shutdownDeadline }, 'stopping');
          void worker.stop({ deadlineMs: o.shutdownDeadline }).finally(() => {
            off();
            resolve();
          });
        });
      });
      await worker.start();
      await done;
      await metrics?.stop();
      await storage.close();
    },
  );

  addRunOptions(program.command('tick').description('cron mode: rescue expired leases, run due jobs until none are left or --max-seconds, exit'))
    .option('--max-seconds <n>', 'time budget for this run', parseIntIn(1, 86_400), 55)
    .action(async (o: RunOpts & { maxSeconds: number }, cmd: Command) => {
      const until = Date.now() + o.maxSeconds * 1000;
      const { storage, worker } = await setUp(cmd, o);
      const off = onSignals(() => void worker.stop({ deadlineMs: Math.min(o.shutdownDeadline, 5_000) }));
      const report = await worker.drain({ maxMs: o.maxSeconds * 1000 });
      off();
      await pruneOnce(storage, cmd.opts<RetentionFlags>(), worker.log, until);
      worker.log.info({ event: 'tick.done', ...report }, 'tick finished');
      await storage.close();
    });
}
