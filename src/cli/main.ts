/**
 * The `leasehold` command. Every subcommand opens the database from --db (or LEASEHOLD_DB,
 * or sqlite:leasehold.db in the working directory), does one thing, and closes it.
 * Errors: one line `leasehold: <why> [CODE]` and an exit code per kind (see errors.ts).
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { JobStatus } from '../core/status.js';
import { JOB_STATUSES } from '../core/status.js';
import type { Storage } from '../core/storage.js';
import { createClient } from '../runtime/client.js';
import { cancelJob, cliOperator, retryJob } from '../runtime/operator-jobs.js';
import { VERSION } from '../runtime/version.js';
import { DEFAULT_DB_URL, openStorage } from '../storage/open.js';
import { EXIT, describeError, exitCodeOf, usageLine } from './errors.js';
import { jobDetail, jobsTable, table } from './format.js';
import { parseId, parseIntIn } from './parse.js';
import { registerEnqueueCommand } from './enqueue-command.js';
import { registerWorkerCommands } from './worker-commands.js';
import { registerScheduleCommands } from './schedule-commands.js';
import { registerQueueCommands } from './queue-commands.js';
import { registerDashboardCommand } from './dashboard-command.js';
import { DoctorVerdict, registerDoctorCommand } from './doctor-command.js';
import { registerPruneCommand } from './prune-command.js';

export interface GlobalOpts {
  db: string;
}

/** Open the database named by --db, run `fn`, always close. */
export async function withStorage<T>(cmd: Command, fn: (storage: Storage) => Promise<T>): Promise<T> {
  const { db } = cmd.optsWithGlobals<GlobalOpts>();
  const storage = await openStorage(db);
  try {
    return await fn(storage);
  } finally {
    await storage.close();
  }
}

function print(json: boolean | undefined, value: unknown, text: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : text()}\n`);
}

export function buildProgram(): Command {
  const program = new Command('leasehold')
    .description('Background jobs and schedules kept in your database.')
    .version(VERSION)
    .addOption(new Option('--db <url>', 'database: sqlite:FILE, postgres://…, mysql://…').env('LEASEHOLD_DB').default(DEFAULT_DB_URL))
    // set before the subcommands are added: each copies them
    .configureOutput({ outputError: (message, write) => write(usageLine(message)) })
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  program
    .command('migrate')
    .description('create or upgrade the tables (safe to run from several processes at once)')
    .action(async (_o, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        const r = await s.migrate();
        process.stdout.write(r.applied.length ? `migrated ${s.dialect} from version ${r.from} to ${r.to}: ${r.applied.map((m) => m.name).join(', ')}\n` : `${s.dialect} schema is up to date (version ${r.to})\n`);
      });
    });

  registerEnqueueCommand(program);

  const jobs = program.command('jobs').description('inspect jobs');
  jobs
    .command('list')
    .description('newest jobs first, and due jobs that no live worker can handle')
    .addOption(new Option('--status <status>', 'only this status').choices([...JOB_STATUSES]))
    .option('--queue <name>', 'only this queue')
    .option('--type <type>', 'only this type')
    .option('--limit <n>', 'how many', parseIntIn(1, 1000), 50)
    .option('--before <id>', 'older than this id (paging)', parseId)
    .option('--json', 'print JSON')
    .action(async (o: { status?: JobStatus; queue?: string; type?: string; limit: number; before?: string; json?: boolean }, cmd: Command) => {
      await withStorage(cmd, async (storage) => {
        const client = createClient({ storage });
        const rows = await client.listJobs({ status: o.status, queue: o.queue, type: o.type, limit: o.limit, beforeId: o.before });
        const unhandled = await client.unhandledJobs();
        print(o.json, { jobs: rows, unhandled }, () => {
          let out = rows.length ? jobsTable(rows) : '(no jobs)';
          if (unhandled.length) {
            out += `\n\nwaiting for a worker that handles their type:\n${table(['TYPE', 'QUEUE', 'DUE'], unhandled.map((u) => [u.type, u.queue, u.capped ? `${u.due}+` : u.due]))}`;
          }
          return out;
        });
      });
    });
  jobs
    .command('show <id>')
    .description('one job and every attempt it made')
    .option('--json', 'print JSON')
    .action(async (id: string, o: { json?: boolean }, cmd: Command) => {
      await withStorage(cmd, async (storage) => {
        const client = createClient({ storage });
        const job = await client.getJob(parseId(id));
        const attempts = await client.listAttempts(job.id);
        print(o.json, { job, attempts }, () => jobDetail(job, attempts));
      });
    });

  // an operator's action on one job, recorded in its history as this user on this host; then says what it did
  const actions = [
    { verb: 'retry', description: 'make a failed, dead or cancelled job due now', act: retryJob, done: 'is due now' },
    { verb: 'cancel', description: 'cancel a job not yet finished (a running handler is signalled; what waits for it in its workflow is cancelled by its policy)', act: cancelJob, done: 'cancelled' },
  ];
  for (const { verb, description, act, done } of actions) {
    program
      .command(`${verb} <id>`)
      .description(description)
      .action(async (id: string, _o, cmd: Command) => {
        await withStorage(cmd, async (storage) => {
          const job = await act(storage, parseId(id), cliOperator());
          process.stdout.write(`job ${job.id} ${done}\n`);
        });
      });
  }

  registerWorkerCommands(program);
  registerScheduleCommands(program);
  registerQueueCommands(program);
  registerDashboardCommand(program);
  registerPruneCommand(program);
  registerDoctorCommand(program);
  return program;
}

/** Run the CLI; resolves to the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    // doctor printed its findings; the code says how bad they are
    if (e instanceof DoctorVerdict) return e.exitCode;
    // commander printed its own error (through outputError) or the help it was asked for; an
    // InvalidArgumentError from a parser called inside an action it never saw
    if (e instanceof CommanderError && !(e instanceof InvalidArgumentError)) {
      if (e.code === 'commander.help' && e.exitCode !== 0) process.stderr.write(usageLine('a command is needed'));
    } else {
      process.stderr.write(describeError(e));
    }
    return exitCodeOf(e);
  }
}
