/**
 * `leasehold schedules list|add|remove|enable|disable|run-now` and `leasehold locks list`.
 * Bad input (invalid cron, unknown zone, zero interval, bad JSON) exits 2 with nothing written;
 * an unknown schedule exits 3.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import type { ScheduleRow } from '../core/index.js';
import { LeaseholdError, MISFIRE_POLICIES, parsePayloadText } from '../core/index.js';
import { nextAfterFor } from '../runtime/cron.js';
import { scheduledJobOf, upsertSchedule } from '../runtime/scheduler.js';
import { iso, table } from './format.js';
import { withStorage } from './main.js';
import { parseDuration, parseIntIn } from './parse.js';

function out(json: boolean | undefined, value: unknown, text: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : text()}\n`);
}

function notFound(name: string): never {
  throw new LeaseholdError('SCHEDULE_NOT_FOUND', `schedule ${name} not found`);
}

function schedulesTable(rows: ScheduleRow[]): string {
  return table(
    ['NAME', 'WHEN', 'TZ', 'TYPE', 'MISFIRE', 'ENABLED', 'NEXT RUN', 'LAST RUN', 'SOURCE'],
    rows.map((r) => [r.name, r.cron ?? `every ${r.everyMs} ms`, r.cron ? r.timezone : '-', r.type,
      r.misfire === 'all' ? `all (max ${r.misfireMax}${r.misfireWindowMs ? `, window ${r.misfireWindowMs} ms` : ''})` : r.misfire,
      r.enabled ? 'yes' : 'no', iso(r.nextRunAt), iso(r.lastRunAt), r.source]),
  );
}

interface AddOpts {
  cron?: string; every?: number; tz: string; type: string; payload: string; queue?: string; priority?: number; maxAttempts?: number;
  misfire?: 'skip' | 'latest' | 'all'; misfireWindow?: number; misfireMax?: number; disabled?: boolean; json?: boolean;
}

export function registerScheduleCommands(program: Command): void {
  const schedules = program.command('schedules').description('recurring schedules: one job per slot, whatever the number of schedulers');
  schedules
    .command('list')
    .description('every schedule with its next and last run')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        const rows = await s.schedules.list();
        out(o.json, rows, () => (rows.length ? schedulesTable(rows) : '(no schedules)'));
      });
    });
  schedules
    .command('add <name>')
    .description('add or change a schedule (by name)')
    .addOption(new Option('--cron <expr>', "cron, 5 fields or 6 (seconds first), e.g. '0 2 * * *'").conflicts('every'))
    .addOption(new Option('--every <duration>', 'fixed interval: 30s, 10m, 2h (aligned to the Unix epoch)').argParser(parseDuration))
    .option('--tz <zone>', 'IANA time zone of the cron expression (checked for --every too)', 'UTC')
    .requiredOption('--type <type>', 'job type each slot enqueues')
    .option('--payload <json>', 'job payload (JSON)', '{}')
    .option('--queue <name>', 'queue of the jobs')
    .option('--priority <n>', 'lower runs first', parseIntIn(-32768, 32767))
    .option('--max-attempts <n>', 'attempts per job', parseIntIn(1, 1_000_000))
    .addOption(new Option('--misfire <policy>', 'missed slots after downtime: skip, latest or all').choices([...MISFIRE_POLICIES]))
    .option('--misfire-window <duration>', "with 'all': oldest missed slot still enqueued", parseDuration)
    .option('--misfire-max <n>', "with 'all': at most this many missed slots", parseIntIn(1, 10_000))
    .option('--disabled', 'add it disabled')
    .option('--json', 'print JSON')
    .action(async (name: string, o: AddOpts, cmd: Command) => {
      const payload = parsePayloadText(o.payload);
      await withStorage(cmd, async (s) => {
        const row = await upsertSchedule(s, {
          name, type: o.type, payload, timezone: o.tz, cron: o.cron ?? null, everyMs: o.every ?? null,
          ...(o.queue !== undefined ? { queue: o.queue } : {}), ...(o.priority !== undefined ? { priority: o.priority } : {}),
          ...(o.maxAttempts !== undefined ? { maxAttempts: o.maxAttempts } : {}), ...(o.misfire ? { misfire: o.misfire } : {}),
          ...(o.misfireWindow !== undefined ? { misfireWindowMs: o.misfireWindow } : {}), ...(o.misfireMax !== undefined ? { misfireMax: o.misfireMax } : {}),
          enabled: !o.disabled,
        });
        out(o.json, row, () => `schedule ${row.name} saved; next run ${iso(row.nextRunAt) ?? '(none)'}${row.enabled ? '' : ' (disabled)'}`);
      });
    });
  schedules
    .command('remove <name>')
    .description('delete a schedule (jobs it enqueued stay)')
    .action(async (name: string, _o, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        if (!(await s.schedules.remove({ name }))) notFound(name);
        process.stdout.write(`schedule ${name} removed\n`);
      });
    });
  for (const [verb, enabled] of [['enable', true], ['disable', false]] as const) {
    schedules
      .command(`${verb} <name>`)
      .description(enabled ? 'enable a schedule; it resumes at its next future slot' : 'disable a schedule; it fires nothing until enabled')
      .action(async (name: string, _o, cmd: Command) => {
        await withStorage(cmd, async (s) => {
          const row = await s.schedules.get({ name });
          if (!row) notFound(name);
          // resuming starts from the next future slot: the disabled period is not a misfire
          const next = enabled ? nextAfterFor(row)(await s.now()) : undefined;
          const after = await s.schedules.setEnabled({ name, enabled, ...(next !== undefined ? { nextRunAt: next } : {}) });
          process.stdout.write(`schedule ${name} ${enabled ? `enabled; next run ${iso(after?.nextRunAt ?? null) ?? '(none)'}` : 'disabled'}\n`);
        });
      });
  }
  schedules
    .command('run-now <name>')
    .description('enqueue one job of the schedule now (its regular slots are unchanged)')
    .action(async (name: string, _o, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        const row = await s.schedules.get({ name });
        if (!row) notFound(name);
        const job = await s.schedules.runNow({ name, job: scheduledJobOf(row) });
        if (!job) notFound(name);
        process.stdout.write(`enqueued job ${job.id} (${job.type}) for schedule ${name}\n`);
      });
    });

  program
    .command('locks')
    .description('distributed locks')
    .command('list')
    .description('held locks: holder, since when, expires when')
    .option('--name <name>', 'only this lock')
    .option('--json', 'print JSON')
    .action(async (o: { name?: string; json?: boolean }, cmd: Command) => {
      await withStorage(cmd, async (s) => {
        const rows = await s.locks.list(o.name === undefined ? {} : { name: o.name });
        out(o.json, rows, () =>
          rows.length
            ? table(['NAME', 'SLOT', 'HOLDER', 'FENCE', 'SINCE', 'EXPIRES', 'STATE'], rows.map((l) => [l.name, l.slot, l.owner, l.fence, iso(l.acquiredAt), iso(l.expiresAt), l.expired ? 'expired' : 'held']))
            : '(no locks held)',
        );
      });
    });
}
