/**
 * `leasehold enqueue <type> [payload]`. With `--handlers` the job definitions decide as they do
 * for the application's client: an unknown type is refused, the payload is checked against the
 * type's schema, and the type's queue, priority, attempts and time limits are the job's defaults
 * (the flags still win). Without it any well-formed type and JSON payload is taken as given.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { UnknownJobTypeError, parsePayloadText } from '../core/index.js';
import { createClient } from '../runtime/client.js';
import { type AnyJobDefinition, JobRegistry, validateWithSchema } from '../runtime/job-definition.js';
import { iso } from './format.js';
import { withStorage } from './main.js';
import { parseDate, parseDuration, parseIntIn } from './parse.js';
import { loadHandlers } from './worker-commands.js';

interface EnqueueFlags {
  runAt?: Date;
  delay?: number;
  queue?: string;
  priority?: number;
  maxAttempts?: number;
  key?: string;
  timeout?: number;
  handlers?: string;
  json?: boolean;
}

/** The definitions of `--handlers`, with the type and payload checked: bad input fails before the database is opened. */
async function definitionsFor(modulePath: string, type: string, payload: unknown): Promise<readonly AnyJobDefinition[]> {
  const defs = await loadHandlers(modulePath);
  const registry = new JobRegistry(defs);
  const def = registry.get(type);
  if (!def) throw new UnknownJobTypeError(type, registry.types);
  // the client validates again at enqueue, from the payload as given (a schema may transform it)
  if (def.schema) await validateWithSchema(type, def.schema, payload);
  return defs;
}

export function registerEnqueueCommand(program: Command): void {
  program
    .command('enqueue <type> [payload]')
    .description('add a job; payload is JSON (default {})')
    .addOption(new Option('--run-at <iso>', 'run at this time').argParser(parseDate).conflicts('delay'))
    .addOption(new Option('--delay <duration>', 'run after this long: 30s, 10m, 2h').argParser(parseDuration))
    .option('--queue <name>', 'queue name')
    .option('--priority <n>', 'lower runs first', parseIntIn(-32768, 32767))
    .option('--max-attempts <n>', 'attempts before the job is dead', parseIntIn(1, 1_000_000))
    .option('--key <key>', 'idempotency key: a second enqueue with it returns the first job')
    .option('--timeout <duration>', 'inactivity timeout per attempt', parseDuration)
    .addOption(new Option('--handlers <module>', "module exporting job definitions: the type's schema checks the payload, its policies are the defaults").env('LEASEHOLD_HANDLERS'))
    .option('--json', 'print the job as JSON')
    .action(async (type: string, payloadText: string | undefined, o: EnqueueFlags, cmd: Command) => {
      const payload = parsePayloadText(payloadText ?? '{}');
      const jobs = o.handlers === undefined ? undefined : await definitionsFor(o.handlers, type, payload);
      await withStorage(cmd, async (storage) => {
        const job = await createClient({ storage, ...(jobs ? { jobs } : {}) }).enqueue(type, payload, {
          ...(o.runAt ? { runAt: o.runAt } : {}),
          ...(o.delay !== undefined ? { delayMs: o.delay } : {}),
          ...(o.queue !== undefined ? { queue: o.queue } : {}),
          ...(o.priority !== undefined ? { priority: o.priority } : {}),
          ...(o.maxAttempts !== undefined ? { maxAttempts: o.maxAttempts } : {}),
          ...(o.key !== undefined ? { idempotencyKey: o.key } : {}),
          ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
        });
        const text = () => `${job.created ? 'enqueued' : 'already enqueued (same key)'} job ${job.id} (${job.type}, queue ${job.queue}, run at ${iso(job.runAt)})`;
        process.stdout.write(`${o.json ? JSON.stringify(job, null, 2) : text()}\n`);
      });
    });
}
